package poolgen

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
)

func ratesFor(kinds []string, total float64) Rates {
	r := Rates{}
	for _, k := range kinds {
		r[k] = total / float64(len(kinds))
	}
	return r
}

func byDefect(tasks []Task) map[string][]Task {
	out := map[string][]Task{}
	for _, tk := range tasks {
		out[tk.Label.Defect] = append(out[tk.Label.Defect], tk)
	}
	return out
}

// TestCodecAndStructuralDefects: every codec blob makes bundle.Walk fail
// with the expected reason; structural defects decode fine but lack the
// required file or carry an invalid task.toml.
func TestCodecAndStructuralDefects(t *testing.T) {
	t.Parallel()
	var kinds []string
	for _, k := range DefectKinds() {
		if defects[k].stage == StageValidate && k != DefectGzipBomb && k != DefectTooManyMembers {
			kinds = append(kinds, k)
		}
	}
	tasks := generate(t, Options{N: 120, Seed: 5, Rates: ratesFor(kinds, 0.9)})
	for _, k := range HeavyKinds { // one of each, through the public API
		tasks = append(tasks, generate(t, Options{N: 1, Seed: 6, Rates: Rates{k: 1}})...)
	}
	groups := byDefect(tasks)
	for _, k := range append(kinds, HeavyKinds...) {
		if len(groups[k]) == 0 {
			t.Errorf("no %s task in the pool", k)
		}
	}
	var tomls []string
	var tomlWant []string
	for _, tk := range tasks {
		l := tk.Label
		if l.Defect == "" {
			tomls, tomlWant = append(tomls, fileOf(tk, "task.toml")), append(tomlWant, "ok")
			continue
		}
		if tk.Blob != nil {
			start := time.Now()
			_, _, err := decoded(tk.Blob)
			d, ok := bundle.AsDefect(err)
			if !ok || d.Reason != l.ExpectedReason {
				t.Errorf("%s (%s %v): Walk returned %v, want reason %s", tk.Path, l.Defect, l.Params, err, l.ExpectedReason)
			}
			if IsHeavy(l.Defect) {
				t.Logf("%s: Walk failed after %v", l.Defect, time.Since(start))
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("%s: Walk took %v", tk.Path, took)
			}
			continue
		}
		_, files, err := decoded(blobOf(t, tk))
		if err != nil {
			t.Errorf("%s (%s): structural defect does not decode: %v", tk.Path, l.Defect, err)
			continue
		}
		missing := map[string]string{
			DefectMissingInstruction: "instruction.md", DefectMissingTaskToml: "task.toml",
			DefectMissingEnvironment: "environment/Dockerfile", DefectMissingTestScript: "tests/test.sh",
		}[l.Defect]
		if missing != "" {
			if _, ok := files[missing]; ok {
				t.Errorf("%s (%s): %s is present", tk.Path, l.Defect, missing)
			}
			if l.Defect == DefectMissingEnvironment {
				for name := range files {
					if strings.HasPrefix(name, "environment/") {
						t.Errorf("%s: %s present", tk.Path, name)
					}
				}
			}
		}
		if l.Defect == DefectInvalidTaskToml {
			tomls = append(tomls, string(files["task.toml"]))
			tomlWant = append(tomlWant, "invalid")
		}
	}
	// task.toml: good ones parse with tomllib and have numeric timeouts;
	// broken ones fail to parse or have a string timeout.
	const script = `
import json, sys, tomllib
out = []
for text in json.load(sys.stdin):
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        out.append("syntax")
        continue
    ok = all(isinstance(d.get(s, {}).get("timeout_sec", 0), (int, float)) for s in ("verifier", "agent"))
    ok = ok and ("version" in d or "schema_version" in d) and "verifier" in d
    out.append("ok" if ok else "type")
json.dump(out, sys.stdout)
`
	in, _ := json.Marshal(tomls)
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tomllib check: %v", err)
	}
	var got []string
	json.Unmarshal(out, &got)
	for i, g := range got {
		if (g == "ok") != (tomlWant[i] == "ok") {
			t.Errorf("task.toml #%d: %s, want %s:\n%s", i, g, tomlWant[i], tomls[i])
		}
	}
}

// TestGzipBombIsValidGzip inflates one bomb completely: the hand-assembled
// stream must be a valid gzip member (CRC and size) of more than 600 MiB,
// made of tar members each under the decoder's per-file limit.
func TestGzipBombIsValidGzip(t *testing.T) {
	params := map[string]any{}
	blob, err := gzipBomb(taskRand(1, 1, 1), []bundle.Entry{{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("hi\n")}}, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(blob) > 2<<20 {
		t.Errorf("bomb blob is %d bytes", len(blob))
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, zr)
	if err != nil {
		t.Fatalf("inflating the bomb: %v", err)
	}
	if n <= 600<<20 || params["inflated_bytes"].(int64) <= 600<<20 {
		t.Errorf("bomb inflates to %d bytes", n)
	}
	lim := bundle.DefaultLimits()
	if lim.MaxTotalBytes >= n || lim.MaxFileBytes < 250<<20 {
		t.Logf("decoder limits changed: %+v", lim)
	}
}

type hostRun struct {
	name       string
	entries    []bundle.Entry
	oracle     bool
	timeout    time.Duration
	check      func(hostResult) error
	testPrefix string // prepended to test.sh after the shebang (e.g. RANDOM=seed)
}

func runAll(t *testing.T, runs []hostRun) {
	t.Helper()
	tmp := t.TempDir()
	var wg sync.WaitGroup
	var mu sync.Mutex
	sem := make(chan struct{}, 4)
	for _, rn := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			entries := rn.entries
			if rn.testPrefix != "" {
				entries = append([]bundle.Entry(nil), entries...)
				for i, e := range entries {
					if e.Name == "tests/test.sh" {
						e.Data = []byte(strings.Replace(string(e.Data), "\n", "\n"+rn.testPrefix, 1))
						entries[i] = e
					}
				}
			}
			timeout := rn.timeout
			if timeout == 0 {
				timeout = 30 * time.Second
			}
			res, err := runOnHost(context.Background(), tmp, "python3", entries, rn.oracle, timeout)
			if err == nil {
				err = rn.check(res)
			}
			if err != nil {
				mu.Lock()
				t.Errorf("%s: %v\n%s", rn.name, err, lastLines(res.Output, 15))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func isValidReward(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 && f <= 1
}

// TestRuntimeAndLintDefects checks each runtime, environment and lint
// defect on its files and, where it shows at run time, by running the
// task's scripts on the host.
func TestRuntimeAndLintDefects(t *testing.T) {
	t.Parallel()
	var kinds []string
	for _, k := range DefectKinds() {
		if defects[k].stage != StageValidate {
			kinds = append(kinds, k)
		}
	}
	tasks := generate(t, Options{N: 110, Seed: 77, Rates: ratesFor(kinds, 0.93)})
	groups := byDefect(tasks)
	for _, k := range kinds {
		if len(groups[k]) == 0 {
			t.Errorf("no %s task in the pool", k)
		}
	}
	blobs := map[string][]byte{}
	var runs []hostRun
	var kataWrong []checkJob
	var reveal []checkJob
	var flaky *Task // the flakiest task, run below
	for _, tk := range tasks {
		l := tk.Label
		blob := blobOf(t, tk)
		blobs[tk.Path] = blob
		if _, _, err := decoded(blob); err != nil {
			t.Errorf("%s (%s): %v", tk.Path, l.Defect, err)
			continue
		}
		testSh := fileOf(tk, "tests/test.sh")
		docker := fileOf(tk, "environment/Dockerfile")
		kata := l.Family == FamilyKata
		fail := func(format string, args ...any) {
			t.Errorf("%s (%s %v): %s", tk.Path, l.Defect, l.Params, fmt.Sprintf(format, args...))
		}
		switch l.Defect {
		case DefectDuplicate:
			orig, ok := blobs[l.DuplicateOf]
			if !ok || !bytes.Equal(orig, blob) || l.DuplicateOf >= tk.Path || l.ExpectedReason != ReasonDuplicateContent {
				fail("not a byte-identical copy of an earlier task %s", l.DuplicateOf)
			}
		case DefectFlakyVerifier:
			p := l.Params["flake_prob"].(float64)
			thr := int(math.Round(p * 32768))
			if !strings.Contains(testSh, fmt.Sprintf(`"$RANDOM" -lt %d`, thr)) {
				fail("no $RANDOM check with threshold %d", thr)
			}
			if flaky == nil || p > flaky.Label.Params["flake_prob"].(float64) ||
				p == flaky.Label.Params["flake_prob"].(float64) && !kata && flaky.Label.Family == FamilyKata {
				flaky = &tk
			}
		case DefectSlowVerifier:
			sec := l.Params["sleep_sec"].(int)
			if sec < 20 || sec > 60 || !strings.Contains(testSh, fmt.Sprintf("sleep %d\n", sec)) {
				fail("no sleep %d", sec)
			}
		case DefectHangingVerifier:
			if !strings.Contains(testSh, "sleep infinity") && !strings.Contains(testSh, "tail -f /dev/null") && !strings.Contains(testSh, "until [ -f") {
				fail("no hang")
			}
			runs = append(runs, hostRun{name: tk.Path + " hang", entries: tk.Entries, oracle: true, timeout: 2 * time.Second,
				check: func(r hostResult) error {
					if !r.TimedOut || r.HasFile {
						return fmt.Errorf("did not hang (timeout=%v, reward file=%v)", r.TimedOut, r.HasFile)
					}
					return nil
				}})
		case DefectNopPasses:
			runs = append(runs, hostRun{name: tk.Path + " nop", entries: tk.Entries, oracle: false, check: func(r hostResult) error {
				if r.Reward != "1" {
					return fmt.Errorf("reward %q without a solution, want 1", r.Reward)
				}
				return nil
			}})
		case DefectWrongOracle:
			if kata {
				kataWrong = append(kataWrong, checkJob{fileOf(tk, "tests/test_solution.py"), strp(solutionCode(tk))})
			} else {
				runs = append(runs, hostRun{name: tk.Path + " wrong", entries: tk.Entries, oracle: true, check: func(r hostResult) error {
					if r.Reward != "0" {
						return fmt.Errorf("reward %q with the wrong oracle, want 0", r.Reward)
					}
					return nil
				}})
			}
		case DefectRewardMissing:
			runs = append(runs, hostRun{name: tk.Path + " missing", entries: tk.Entries, oracle: true, check: func(r hostResult) error {
				if r.HasFile {
					return fmt.Errorf("reward file written: %q", r.Reward)
				}
				return nil
			}})
		case DefectRewardGarbage:
			runs = append(runs, hostRun{name: tk.Path + " garbage", entries: tk.Entries, oracle: true, check: func(r hostResult) error {
				if !r.HasFile || isValidReward(r.Reward) {
					return fmt.Errorf("reward %q (file %v), want an unusable value", r.Reward, r.HasFile)
				}
				return nil
			}})
		case DefectBuildFails:
			found := false
			for _, bf := range buildFailLines {
				found = found || strings.Contains(docker, bf.line)
			}
			if !found || !strings.HasSuffix(l.Dockerfile, "+build_fails") {
				fail("Dockerfile does not fail:\n%s", docker)
			}
		case DefectBuildSlow:
			sec := l.Params["sleep_sec"].(int)
			if sec < 120 || sec > 300 || !strings.Contains(docker, fmt.Sprintf("RUN sleep %d\n", sec)) {
				fail("no RUN sleep %d", sec)
			}
		case DefectTestsInImage:
			if !strings.Contains(docker, "COPY tests/ /tests/") || fileOf(tk, "environment/tests/test.sh") != testSh {
				fail("tests not in the build context / image")
			}
		case DefectNetworkVerifier:
			if !regexp.MustCompile(`pip install|curl |apt-get install`).MatchString(testSh) {
				fail("no network access in test.sh")
			}
		case DefectInstructionReveals:
			instr := fileOf(tk, "instruction.md")
			if kata {
				// A lookup table built from the instruction alone passes the tests.
				fn := funcName(solutionCode(tk))
				var b strings.Builder
				fmt.Fprintf(&b, "_T = {}\ndef %s(*args):\n    return _T[repr(args)]\n", fn)
				re := regexp.MustCompile(`(?m)^assert ` + regexp.QuoteMeta(fn) + `\((.*)\) == (.*)$`)
				for _, m := range re.FindAllStringSubmatch(instr, -1) {
					fmt.Fprintf(&b, "_T[repr((%s,))] = %s\n", m[1], m[2])
				}
				reveal = append(reveal, checkJob{fileOf(tk, "tests/test_solution.py"), strp(b.String())})
			} else if exp := strings.TrimSpace(fileOf(tk, "tests/expected_output.txt")); !strings.Contains(instr, exp) {
				fail("expected output not in the instruction")
			}
		case DefectNoSolution:
			for _, e := range tk.Entries {
				if strings.HasPrefix(e.Name, "solution/") {
					fail("has %s", e.Name)
				}
			}
		}
	}
	if flaky != nil {
		// Same task, correct oracle, RANDOM seeded so the runs are
		// reproducible: both outcomes must occur.
		var mu sync.Mutex
		seen := map[string]int{}
		const n = 10
		for seed := 1; seed <= n; seed++ {
			runs = append(runs, hostRun{name: flaky.Path + " flaky", entries: flaky.Entries, oracle: true,
				testPrefix: fmt.Sprintf("RANDOM=%d\n", seed), check: func(r hostResult) error {
					mu.Lock()
					seen[r.Reward]++
					mu.Unlock()
					if r.Reward != "0" && r.Reward != "1" {
						return fmt.Errorf("reward %q", r.Reward)
					}
					return nil
				}})
		}
		t.Cleanup(func() {
			if seen["0"] == 0 || seen["1"] == 0 {
				t.Errorf("%s: flaky verifier outcomes %v over %d runs (%v)", flaky.Path, seen, n, flaky.Label.Params)
			}
		})
	}
	if len(kataWrong) > 0 {
		for i, r := range runChecker(t, kataWrong) {
			if r.Passed {
				t.Errorf("kata wrong oracle #%d passes its tests", i)
			}
		}
	}
	if len(reveal) > 0 {
		for i, r := range runChecker(t, reveal) {
			if !r.Passed {
				t.Errorf("kata instruction_reveals #%d: a lookup table of the instruction fails: %s", i, r.Error)
			}
		}
	}
	start := time.Now()
	runAll(t, runs)
	t.Logf("%d host runs in %v", len(runs), time.Since(start))
}
