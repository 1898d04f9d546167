package poolgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/otcurate/otcurate/bundle"
)

// Host runs: the generated scripts only use a handful of absolute container
// paths (/app, /tests, /output, /solution, /logs), so a task can be run on
// the host by rewriting those paths under a temporary root. The image build
// is simulated (environment/seeds/ is copied to /app/data, /output is
// created) and pytest, which the host may lack, is replaced by a tiny shim
// that imports the test module and calls every test_* function.

var containerRoots = []string{"/logs", "/app", "/tests", "/output", "/solution"}

func isPathChar(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c == '/' || c == '$' ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// remapPaths prefixes every container path in s (a whole path word such as
// /app/solution.py or "/tests", not a part of a longer path) with root.
func remapPaths(s, root string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '/' && (i == 0 || !isPathChar(s[i-1])) {
			matched := false
			for _, p := range containerRoots {
				end := i + len(p)
				if strings.HasPrefix(s[i:], p) && (end == len(s) || s[end] == '/' || !isPathChar(s[end])) {
					b.WriteString(root)
					b.WriteString(p)
					i = end
					matched = true
					break
				}
			}
			if matched {
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// pytestShim stands in for `python3 -m pytest [options] FILE`: it exits 0
// when every test_* function of FILE passes, 1 when one fails, 2 when the
// module cannot be imported and 5 when it has no tests (like pytest).
const pytestShim = `import importlib.util, sys, traceback
path = [a for a in sys.argv[1:] if a.endswith(".py")][-1]
spec = importlib.util.spec_from_file_location("test_module", path)
mod = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(mod)
except BaseException:
    traceback.print_exc()
    print("1 error during collection")
    sys.exit(2)
tests = [(n, f) for n, f in vars(mod).items() if n.startswith("test") and callable(f)]
failed = 0
for name, f in tests:
    try:
        f()
    except BaseException:
        failed += 1
        traceback.print_exc()
print("%d passed, %d failed" % (len(tests) - failed, failed))
sys.exit(5 if not tests else (1 if failed else 0))
`

// hostLayout writes the task under root as the container would see it.
func hostLayout(root string, entries []bundle.Entry, python string) error {
	for _, d := range []string{"app/data", "output", "logs/verifier", "logs/agent", "tests", "task"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	shim := filepath.Join(root, "pytest_shim.py")
	if err := os.WriteFile(shim, []byte(pytestShim), 0o644); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Kind != bundle.KindFile {
			continue
		}
		var dst string
		data := e.Data
		switch {
		case strings.HasPrefix(e.Name, "environment/seeds/"):
			dst = filepath.Join(root, "app/data", strings.TrimPrefix(e.Name, "environment/seeds/"))
		case strings.HasPrefix(e.Name, "tests/"), strings.HasPrefix(e.Name, "solution/"):
			dst = filepath.Join(root, e.Name)
			if !strings.HasSuffix(e.Name, "expected_output.txt") {
				text := remapPaths(string(data), root)
				text = strings.ReplaceAll(text, pytestCmd, python+" "+shim)
				data = []byte(text)
			}
		default:
			dst = filepath.Join(root, "task", e.Name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, e.Mode|0o600); err != nil {
			return err
		}
	}
	return nil
}

// hostResult is the outcome of one verifier run on the host.
type hostResult struct {
	Reward   string // content of reward.txt, trimmed
	HasFile  bool   // reward.txt was written
	TimedOut bool
	Output   string // stdout+stderr of the scripts, for diagnostics
}

// runOnHost lays the task out in a fresh directory under tmp, optionally
// runs the oracle, then runs the verifier and reads the reward.
func runOnHost(ctx context.Context, tmp, python string, entries []bundle.Entry, withOracle bool, timeout time.Duration) (hostResult, error) {
	root, err := os.MkdirTemp(tmp, "hostrun-")
	if err != nil {
		return hostResult{}, err
	}
	defer os.RemoveAll(root)
	if err := hostLayout(root, entries, python); err != nil {
		return hostResult{}, err
	}
	script := "cd " + shellQuote(filepath.Join(root, "app")) + "\n"
	if withOracle {
		script += "bash " + shellQuote(filepath.Join(root, "solution/solve.sh")) + "\n"
	}
	script += "cd " + shellQuote(filepath.Join(root, "app")) + "\nbash " + shellQuote(filepath.Join(root, "tests/test.sh")) + "\n"
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "bash", "-c", script)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + root, "LC_ALL=C", "PYTHONDONTWRITEBYTECODE=1", "PYTHONHASHSEED=random"}
	cmd.WaitDelay = time.Second
	killGroup(cmd)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	res := hostResult{Output: out.String()}
	if cctx.Err() != nil && ctx.Err() == nil {
		res.TimedOut = true
	} else if ctx.Err() != nil {
		return res, ctx.Err()
	} else if runErr != nil {
		var ee *exec.ExitError
		if !errors.As(runErr, &ee) {
			return res, runErr
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "logs/verifier/reward.txt")); err == nil {
		res.HasFile = true
		res.Reward = strings.TrimSpace(string(b))
	}
	return res, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hostCheck verifies a task with a working oracle and verifier: reward 0
// without the oracle, reward 1 with it.
func hostCheck(ctx context.Context, tmp, python string, t Task) error {
	for _, withOracle := range []bool{false, true} {
		res, err := runOnHost(ctx, tmp, python, t.Entries, withOracle, 60*time.Second)
		if err != nil {
			return err
		}
		want := map[bool]string{false: "0", true: "1"}[withOracle]
		if !res.HasFile || res.Reward != want {
			return fmt.Errorf("poolgen: host check of %s (%s, oracle=%v): reward %q (file=%v, timeout=%v), want %s\n%s",
				t.Path, t.Label.Template, withOracle, res.Reward, res.HasFile, res.TimedOut, want, lastLines(res.Output, 30))
		}
	}
	return nil
}
