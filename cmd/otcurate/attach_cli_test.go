package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
)

// TestAttachSolutionsNeedsFlaky: without the flaky stage no task has a
// proof, so the flag is refused before anything runs.
func TestAttachSolutionsNeedsFlaky(t *testing.T) {
	dir := t.TempDir()
	if _, code := run(t, "build", "--pool", "../../testdata/sample-pool.parquet", "-o", filepath.Join(dir, "o.parquet"), "--run-dir", dir,
		"--stages", "validate,lint", "--attach-solutions"); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
}

// TestBuildProofLineAndAttach builds a pool of an oracle task, a task
// proven by a --solutions entry and an unproven one on the fake sandbox
// backend: the end-of-build printout states the proof split, the report
// shows it (and `otcurate report` prints it again), and with --attach-solutions the supplied solution is inside
// the proven task's bundle in the output (the others unchanged).
func TestBuildProofLineAndAttach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the fake sandbox backend needs root")
	}
	t.Setenv("OTCURATE_FAKE_DIR", filepath.Join(t.TempDir(), "fake"))
	dir := t.TempDir()
	check := "#!/bin/bash\n[ -f /tmp/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	solve := "#!/bin/bash\ntouch /tmp/done\n"
	tasks := filepath.Join(dir, "pool")
	for name, withSolution := range map[string]bool{"oracle": true, "proven": false, "unproven": false} {
		files := map[string]string{
			"instruction.md":         "Create /tmp/done (" + name + ").\n",
			"task.toml":              "[verifier]\ntimeout_sec = 30\n[agent]\ntimeout_sec = 30\n",
			"environment/Dockerfile": "FROM debian:bookworm\n",
			"tests/test.sh":          check,
		}
		if withSolution {
			files["solution/solve.sh"] = solve
		}
		writeTaskDir(t, filepath.Join(tasks, name), files)
	}
	writeTaskDir(t, filepath.Join(dir, "sols", "proven", "solution"), map[string]string{"solve.sh": solve})
	src, err := pool.Open(tasks)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]byte{}
	if err := src.Each(context.Background(), nil, func(r pool.Record) error {
		before[r.Path] = append([]byte(nil), r.Blob...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	out, runDir := filepath.Join(dir, "out.parquet"), filepath.Join(dir, "run")
	stdout, code := run(t, "build", "--pool", tasks, "-o", out, "--run-dir", runDir, "--stages", "validate,flaky", "--sandbox", "fake",
		"--nop-repeats", "2", "--flaky-repeats", "2", "--solutions", filepath.Join(dir, "sols"), "--attach-solutions")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"kept 3: 1 oracle, 1 supplied, 0 policy, 1 unproven (verifier_unproven)\n",
		"attach-solutions: 1 kept tasks got their supplied or discovered solution as solution/, 0 could not"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if again, code := run(t, "report", runDir); code != 0 || !strings.Contains(again, "kept 3: 1 oracle, 1 supplied, 0 policy, 1 unproven (verifier_unproven)\n") {
		t.Errorf("otcurate report: exit %d, no proof line", code)
	}
	page, err := os.ReadFile(filepath.Join(runDir, "report.html"))
	if err != nil || !strings.Contains(string(page), "1 of them with an unproven verifier") {
		t.Errorf("report.html does not state the unproven task: %v", err)
	}
	res, err := pool.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := res.Each(context.Background(), nil, func(r pool.Record) error {
		n++
		if r.Path != "proven" {
			if string(r.Blob) != string(before[r.Path]) {
				t.Errorf("%s: bytes changed", r.Path)
			}
			return nil
		}
		b, err := bundle.Scan(r.Blob, bundle.DefaultLimits(), bundle.RetainAll(bundle.DefaultLimits()))
		if err != nil {
			return err
		}
		info, err := bundle.Validate(b)
		if err != nil {
			return err
		}
		if data, ok := b.Data("solution/solve.sh"); !info.HasSolution || !ok || string(data) != solve {
			t.Errorf("proven: solution/solve.sh %q (has solution %v)", data, info.HasSolution)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("output holds %d rows, want 3", n)
	}
}
