package poolgen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
)

func generate(t testing.TB, o Options) []Task {
	t.Helper()
	var out []Task
	if err := Generate(context.Background(), o, func(tk Task) error {
		out = append(out, tk)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(out) != o.N {
		t.Fatalf("got %d tasks, want %d", len(out), o.N)
	}
	return out
}

func blobOf(t testing.TB, tk Task) []byte {
	t.Helper()
	if tk.Entries == nil {
		return tk.Blob
	}
	b, err := encode(tk.Entries)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decoded walks a blob with the safe decoder and returns the members and
// file contents.
func decoded(blob []byte) (map[string]bundle.Member, map[string][]byte, error) {
	members := map[string]bundle.Member{}
	files := map[string][]byte{}
	err := bundle.Walk(bytes.NewReader(blob), bundle.Limits{}, func(m bundle.Member, r io.Reader) error {
		members[m.Name] = m
		if m.Kind == bundle.KindFile && m.Size < 1<<20 { // never buffer a bomb member
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			files[m.Name] = b
		}
		return nil
	})
	return members, files, err
}

func fileOf(tk Task, name string) string {
	for _, e := range tk.Entries {
		if e.Name == name {
			return string(e.Data)
		}
	}
	return ""
}

func hasFile(tk Task, name string) bool {
	for _, e := range tk.Entries {
		if e.Name == name {
			return true
		}
	}
	return false
}

// solutionCode extracts the Python written by a kata oracle.
func solutionCode(tk Task) string {
	if c := fileOf(tk, "solution/solution.py"); c != "" {
		return c
	}
	s := fileOf(tk, "solution/solve.sh")
	const marker = "<< 'EOF'\n"
	i := strings.Index(s, marker)
	if i < 0 {
		return ""
	}
	body := s[i+len(marker):]
	j := strings.Index(body, "\nEOF\n")
	if j < 0 {
		return ""
	}
	return body[:j+1]
}

func funcName(code string) string {
	line, _, _ := strings.Cut(code, "\n")
	name, _, _ := strings.Cut(strings.TrimPrefix(line, "def "), "(")
	return name
}

// checkerScript runs kata test modules in one process: for each job it
// installs the given source as the module `solution` (or none), executes
// the test module and calls every test_* function.
const checkerScript = `
import json, signal, sys, types

def alarm(*_):
    raise TimeoutError("test timed out")

signal.signal(signal.SIGALRM, alarm)
out = []
for job in json.load(sys.stdin):
    sys.modules.pop("solution", None)
    if job["solution"] is not None:
        mod = types.ModuleType("solution")
        exec(compile(job["solution"], "solution.py", "exec"), mod.__dict__)
        sys.modules["solution"] = mod
    src = job["test"].replace('"/app"', '"/nonexistent-poolgen-app"')
    ns = {"__name__": "test_solution"}
    passed, err = True, ""
    signal.alarm(10)
    try:
        exec(compile(src, "test_solution.py", "exec"), ns)
        tests = [f for n, f in list(ns.items()) if n.startswith("test") and callable(f)]
        if not tests:
            raise AssertionError("no tests")
        for f in tests:
            f()
    except BaseException as e:
        passed, err = False, "%s: %s" % (type(e).__name__, str(e)[:200])
    finally:
        signal.alarm(0)
    out.append({"passed": passed, "error": err})
json.dump(out, sys.stdout)
`

type checkJob struct {
	Test     string  `json:"test"`
	Solution *string `json:"solution"`
}

type checkResult struct {
	Passed bool   `json:"passed"`
	Error  string `json:"error"`
}

func runChecker(t testing.TB, jobs []checkJob) []checkResult {
	t.Helper()
	in, _ := json.Marshal(jobs)
	cmd := exec.Command("python3", "-c", checkerScript)
	cmd.Stdin = bytes.NewReader(in)
	// A hash seed other than the generator's: references must not depend
	// on set iteration order.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "PYTHONHASHSEED=4242", "PYTHONDONTWRITEBYTECODE=1"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("checker: %v\n%s", err, stderr.String())
	}
	var res []checkResult
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(jobs) {
		t.Fatalf("checker output: %v (%d results for %d jobs)", err, len(res), len(jobs))
	}
	return res
}

func strp(s string) *string { return &s }
