package filters_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
)

// proofGate stands in for the verifier gate (no sandbox): it keeps every
// task, with the proof its path starts with ("oracle-", "supplied-",
// "policy-", "none-"), and drops "drop-" tasks.
type proofGate struct{}

func (proofGate) Name() string { return filters.StageFlaky }

func (proofGate) Format() rundir.StageFormat { return rundir.StageFormat{Evidence: true, Proof: true} }

func (proofGate) Process(_ context.Context, it *pipeline.Item) pipeline.Outcome {
	kind, _, _ := strings.Cut(it.Task.Path, "-")
	if kind == "drop" {
		out := pipeline.DropOutcome(filters.ReasonFlakySolutionOrEnv, "")
		out.Proof = filters.ProofPolicy
		return out
	}
	out := pipeline.KeepOutcome("kept", "")
	out.Proof = kind
	return out
}

// TestAttachSolutions builds with --attach-solutions' attacher over tasks
// of every proof kind and reads the output back with the pool reader: the
// tasks proven by a supplied solution (solution_binary, --solutions) or by
// a policy (RUN_DIR/solutions) carry it as solution/ and still validate;
// every other task's bytes are unchanged, including a policy-proven task
// whose store entry has no solve.sh (listed as missed) and a dropped one.
func TestAttachSolutions(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	colSol := solutionBlob(t, "", "#!/bin/bash\necho from-column\n")
	rows := []gateRow{
		{Path: "oracle-a", Task: gateTask(t, gateCheck, gateSolve)},
		{Path: "supplied-col", Task: gateTask(t, gateCheck+"# col\n", ""), Solution: &colSol},
		{Path: "supplied-dir", Task: gateTask(t, gateCheck+"# dir\n", "")},
		{Path: "policy-store", Task: gateTask(t, gateCheck+"# store\n", "")},
		{Path: "policy-nosolve", Task: gateTask(t, gateCheck+"# nosolve\n", "")},
		{Path: "none-a", Task: gateTask(t, gateCheck+"# none\n", "")},
		{Path: "drop-a", Task: gateTask(t, gateCheck+"# drop\n", "")},
	}
	name := filepath.Join(dir, "pool.parquet")
	writeGatePool(t, name, rows)
	put := func(d, body string) {
		t.Helper()
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			if err := os.WriteFile(filepath.Join(d, "solve.sh"), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	sols := filepath.Join(dir, "sols")
	put(filepath.Join(sols, "supplied-dir", "solution"), "#!/bin/bash\necho from-dir\n")
	if err := os.WriteFile(filepath.Join(sols, "supplied-dir", "solution", "data.txt"), []byte("42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(runDir, filters.SolutionStore)
	put(filepath.Join(store, filters.SolutionDirName(rows[3].Task), filters.SolutionSubdir), "#!/bin/bash\necho from-store\n")
	put(filepath.Join(store, filters.SolutionDirName(rows[4].Task)), "") // trajectory only
	put(filepath.Join(store, filters.SolutionDirName(rows[6].Task), filters.SolutionSubdir), "#!/bin/bash\necho dropped\n")

	out := filepath.Join(dir, "out.parquet")
	att := &filters.SolutionAttacher{Solutions: filters.Solutions{Dir: sols, Store: store}}
	sum := buildAttaching(t, name, runDir, out, att)
	if sum.TasksKept != 6 {
		t.Fatalf("kept %d, want 6", sum.TasksKept)
	}
	want := map[string]map[string]string{ // path → solution files attached (nil: bytes unchanged)
		"supplied-col": {"solution/solve.sh": "#!/bin/bash\necho from-column\n"},
		"supplied-dir": {"solution/solve.sh": "#!/bin/bash\necho from-dir\n", "solution/data.txt": "42\n"},
		"policy-store": {"solution/solve.sh": "#!/bin/bash\necho from-store\n"},
	}
	orig := map[string][]byte{}
	for _, r := range rows {
		orig[r.Path] = r.Task
	}
	outSrc, err := pool.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	if err := outSrc.Each(context.Background(), nil, func(rec pool.Record) error {
		seen = append(seen, rec.Path)
		files, attached := want[rec.Path]
		if !attached {
			if !bytes.Equal(rec.Blob, orig[rec.Path]) {
				t.Errorf("%s: bytes changed without a solution to attach", rec.Path)
			}
			return nil
		}
		b, err := bundle.Scan(rec.Blob, bundle.DefaultLimits(), bundle.RetainAll(bundle.DefaultLimits()))
		if err != nil {
			t.Fatalf("%s: %v", rec.Path, err)
		}
		info, err := bundle.Validate(b)
		if err != nil || !info.HasSolution {
			t.Errorf("%s: validates %v, has solution %v", rec.Path, err, info != nil && info.HasSolution)
		}
		for n, body := range files {
			if data, ok := b.Data(n); !ok || string(data) != body {
				t.Errorf("%s: %s = %q, want %q", rec.Path, n, data, body)
			}
		}
		if data, _ := b.Data("tests/test.sh"); !strings.HasPrefix(string(data), gateCheck) {
			t.Errorf("%s: tests/test.sh changed", rec.Path)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "oracle-a,supplied-col,supplied-dir,policy-store,policy-nosolve,none-a" {
		t.Errorf("output rows %v", seen)
	}
	if got := strings.Join(att.Attached(), ","); got != "supplied-col,supplied-dir,policy-store" {
		t.Errorf("attached %q", got)
	}
	if m := att.Missed(); len(m) != 1 || !strings.HasPrefix(m[0], "policy-nosolve: ") {
		t.Errorf("missed %q, want policy-nosolve alone", m)
	}
}

// buildAttaching builds the pool with validate and proofGate, attaching
// solutions with att, and returns the run's summary.
func buildAttaching(t *testing.T, poolFile, runDir, out string, att *filters.SolutionAttacher) *pipeline.Summary {
	t.Helper()
	src, err := pool.Open(poolFile)
	if err != nil {
		t.Fatal(err)
	}
	validate, err := filters.Build([]string{filters.StageValidate}, filters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: append(validate, proofGate{}),
		RunDir: runDir, Output: out, Attach: att})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
