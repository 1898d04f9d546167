package pipeline_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
)

// fakeGate stands in for the verifier gate: it decides a task by the
// prefix of its path ("oracle-", "policy-", "none-", "bad-" drops on an
// oracle, "lost-" is an infrastructure error without a proof), with
// evidence of 2 runs and 1.5 sandbox-seconds per task, served from the
// ledger for paths that end in "-L".
type fakeGate struct{}

func (fakeGate) Name() string { return filters.StageFlaky }

func (fakeGate) Format() rundir.StageFormat {
	return rundir.StageFormat{Evidence: true, Proof: true}
}

func (fakeGate) Process(_ context.Context, it *pipeline.Item) pipeline.Outcome {
	p := it.Task.Path
	ev := &pipeline.Evidence{Runs: 2, Passes: 1, Sandboxes: 1, SandboxSeconds: 1.5, FromLedger: strings.HasSuffix(p, "-L")}
	var out pipeline.Outcome
	switch kind, _, _ := strings.Cut(p, "-"); kind {
	case "oracle":
		out = pipeline.KeepOutcome(filters.ReasonOraclePasses, "")
		out.Proof = filters.ProofOracle
	case "policy":
		out = pipeline.KeepOutcome(filters.ReasonPolicySolves, "")
		out.Proof = filters.ProofPolicy
	case "none":
		out = pipeline.KeepOutcome(filters.ReasonVerifierUnproven, "")
		out.Proof = filters.ProofNone
	case "bad":
		out = pipeline.DropOutcome(filters.ReasonFlakyVerifier, "")
		out.Proof = filters.ProofOracle
	default:
		return pipeline.ErrorOutcome("engine_unavailable", "")
	}
	out.Evidence = ev
	return out
}

// proofPool holds tasks of every proof kind, some served from the ledger.
func proofPool(t *testing.T) pool.Source {
	t.Helper()
	var rows []rawRow
	for i, p := range []string{"oracle-a", "oracle-b", "oracle-c-L", "policy-a", "policy-b-L", "none-a", "none-b", "none-c",
		"bad-a", "bad-b-L", "lost-a", "oracle-d", "none-d", "policy-c"} {
		rows = append(rows, rawRow{Path: str(p), Blob: task(t, fmt.Sprintf("task %d", i))})
	}
	name := filepath.Join(t.TempDir(), "pool.parquet")
	writeRaw(t, name, rows)
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// proofFigures recomputes, from a run directory's decisions.jsonl alone,
// what the summary says about proofs: the gate's decisions by proof and
// the tasks that no decision dropped (the output) by proof.
func proofFigures(t *testing.T, runDir string) (map[string]rundir.ProofStat, map[string]int64) {
	t.Helper()
	stats := map[string]rundir.ProofStat{}
	proofOf, dropped := map[int64]string{}, map[int64]bool{}
	for _, d := range readDecisions(t, filepath.Join(runDir, rundir.DecisionsFile)) {
		if d.Verdict != pipeline.Keep {
			dropped[d.Index] = true
		}
		if d.Proof == "" {
			continue
		}
		proofOf[d.Index] = d.Proof
		s := stats[d.Proof]
		if d.Verdict == pipeline.Keep {
			s.Kept++
		} else {
			s.Dropped++
		}
		if d.Evidence.FromLedger {
			s.FromLedger++
		} else {
			s.Runs += int64(d.Evidence.Runs)
			s.SandboxSeconds += d.Evidence.SandboxSeconds
		}
		stats[d.Proof] = s
	}
	out := map[string]int64{}
	for i, p := range proofOf {
		if !dropped[i] {
			out[p]++
		}
	}
	return stats, out
}

func summaryProofs(sum *pipeline.Summary) map[string]rundir.ProofStat {
	out := map[string]rundir.ProofStat{}
	for _, f := range sum.Funnel {
		for k, p := range f.Proofs {
			out[k] = *p
		}
	}
	return out
}

// TestSummaryProofCounts: summary.json splits the gate's decisions and the
// output's tasks by proof kind, and every figure is the one recomputed
// from decisions.jsonl; a sharded run merged says the same.
func TestSummaryProofCounts(t *testing.T) {
	ctx := context.Background()
	src := proofPool(t)
	dir := t.TempDir()
	stages := func(target int) []pipeline.Stage {
		st := stagesOf(t, []string{filters.StageValidate}, 0, 0)
		st = append(st, fakeGate{})
		if target > 0 {
			st = append(st, stagesOf(t, []string{filters.StageSelect}, target, 3)...)
		}
		return st
	}
	one := filepath.Join(dir, "one")
	sum, _, err := pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: stages(8), RunDir: one,
		Output: filepath.Join(one, "out.parquet"), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	stats, kept := proofFigures(t, one)
	if got := summaryProofs(sum); !reflect.DeepEqual(got, stats) {
		t.Errorf("summary proofs %+v, decisions.jsonl says %+v", got, stats)
	}
	want := map[string]rundir.ProofStat{
		"oracle": {Kept: 4, Dropped: 2, Runs: 8, SandboxSeconds: 6, FromLedger: 2},
		"policy": {Kept: 3, Runs: 4, SandboxSeconds: 3, FromLedger: 1},
		"none":   {Kept: 4, Runs: 8, SandboxSeconds: 6},
	}
	if !reflect.DeepEqual(stats, want) {
		t.Errorf("gate decisions by proof %+v, want %+v", stats, want)
	}
	if !reflect.DeepEqual(sum.KeptByProof, kept) {
		t.Errorf("summary kept_by_proof %v, decisions.jsonl says %v", sum.KeptByProof, kept)
	}
	var total int64
	for _, n := range sum.KeptByProof {
		total += n
	}
	if total != sum.TasksKept || sum.TasksKept != 8 {
		t.Errorf("kept_by_proof sums to %d, tasks_kept %d (want 8)", total, sum.TasksKept)
	}

	// Two shards, merged with the same selection.
	var dirs []string
	for i := range 2 {
		d := filepath.Join(dir, fmt.Sprint("shard", i))
		if _, _, err := pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: stages(0), RunDir: d,
			Output: filepath.Join(d, "out.parquet"), Shard: pipeline.Shard{Index: i, Count: 2}}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	// Each shard's discovered solutions reach the merged run directory.
	for i, d := range dirs {
		sol := filepath.Join(d, filters.SolutionStore, fmt.Sprint("hash", i), filters.SolutionSubdir)
		if err := os.MkdirAll(sol, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sol, "solve.sh"), []byte(fmt.Sprintf("echo %d\n", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	layout := filters.Layout()
	layout[filters.StageFlaky] = fakeGate{}.Format()
	merged := filepath.Join(dir, "merged")
	sel := stagesOf(t, []string{filters.StageSelect}, 8, 3)[0].(pipeline.SetStage)
	msum, _, err := pipeline.Merge(ctx, pipeline.MergeOptions{Layout: layout, RunDirs: dirs, RunDir: merged,
		Output: filepath.Join(merged, "out.parquet"), Stages: []pipeline.SetStage{sel}, Solutions: filters.SolutionStore})
	if err != nil {
		t.Fatal(err)
	}
	if got := summaryProofs(msum); !reflect.DeepEqual(got, stats) {
		t.Errorf("merged summary proofs %+v, want the single run's %+v", got, stats)
	}
	mstats, mkept := proofFigures(t, merged)
	if !reflect.DeepEqual(mstats, stats) || !reflect.DeepEqual(msum.KeptByProof, mkept) {
		t.Errorf("merged run: summary kept_by_proof %v, its decisions say %v and %+v", msum.KeptByProof, mkept, mstats)
	}
	for i := range dirs {
		name := filepath.Join(merged, filters.SolutionStore, fmt.Sprint("hash", i), filters.SolutionSubdir, "solve.sh")
		if data, err := os.ReadFile(name); err != nil || string(data) != fmt.Sprintf("echo %d\n", i) {
			t.Errorf("shard %d's discovered solution in the merged run: %q, %v", i, data, err)
		}
	}
}

// appendAttacher stands in for --attach-solutions: it adds
// solution/solve.sh to every kept task its gate proved by a policy.
type appendAttacher struct{}

func (appendAttacher) Wants(t *pipeline.Task) bool {
	for _, m := range t.Marks {
		if m.Proof() == filters.ProofPolicy {
			return true
		}
	}
	return false
}

func (appendAttacher) Attach(t *pipeline.Task, rec pool.Record) ([]byte, error) {
	return bundle.Append(rec.Blob, bundle.Limits{}, []bundle.Entry{{Name: "solution/solve.sh", Kind: bundle.KindFile, Mode: 0o755,
		Data: []byte("#!/bin/bash\necho " + t.Path + "\n")}})
}

// TestMergeShardsWithAttachedSolutions: shards built with
// --attach-solutions hold rewritten bundles for the tasks a policy proved;
// merge copies them into the merged output as they are (it must not take
// the larger bundle for a pool that changed), and a single run over the
// whole pool writes the same output.
func TestMergeShardsWithAttachedSolutions(t *testing.T) {
	ctx := context.Background()
	src := proofPool(t)
	dir := t.TempDir()
	stages := func() []pipeline.Stage {
		return append(stagesOf(t, []string{filters.StageValidate}, 0, 0), fakeGate{})
	}
	one := filepath.Join(dir, "one")
	if _, _, err := pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: stages(), RunDir: one,
		Output: filepath.Join(one, "out.parquet"), Attach: appendAttacher{}}); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := range 2 {
		d := filepath.Join(dir, fmt.Sprint("shard", i))
		if _, _, err := pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: stages(), RunDir: d,
			Output: filepath.Join(d, "out.parquet"), Shard: pipeline.Shard{Index: i, Count: 2}, Attach: appendAttacher{}}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	layout := filters.Layout()
	layout[filters.StageFlaky] = fakeGate{}.Format()
	merged := filepath.Join(dir, "merged")
	if _, _, err := pipeline.Merge(ctx, pipeline.MergeOptions{Layout: layout, RunDirs: dirs, RunDir: merged,
		Output: filepath.Join(merged, "out.parquet")}); err != nil {
		t.Fatal(err)
	}
	rows := func(name string) map[string][]byte {
		t.Helper()
		s, err := pool.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		if err := s.Each(ctx, nil, func(r pool.Record) error {
			out[r.Path] = bytes.Clone(r.Blob)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want, got := rows(filepath.Join(one, "out.parquet")), rows(filepath.Join(merged, "out.parquet"))
	attached := 0
	for p, b := range want {
		if !bytes.Equal(got[p], b) {
			t.Errorf("%s: the merged output's bundle differs from the single run's", p)
		}
		if strings.HasPrefix(p, "policy-") {
			bd, err := bundle.Scan(b, bundle.DefaultLimits(), bundle.RetainAll(bundle.DefaultLimits()))
			if err != nil || !bd.Has("solution/solve.sh", bundle.KindFile) {
				t.Errorf("%s: no solution attached (%v)", p, err)
			}
			attached++
		}
	}
	if len(got) != len(want) || attached == 0 {
		t.Errorf("merged output %d rows, single run %d (%d attached)", len(got), len(want), attached)
	}
}
