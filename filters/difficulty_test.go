package filters_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/policy/builtin"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/poolgen"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// samplePool is the bundled sample pool and its ground-truth labels.
const samplePool = "../testdata/sample-pool.parquet"

func sampleLabels(t *testing.T) map[string]poolgen.Label {
	t.Helper()
	f, err := os.Open("../testdata/sample-pool.labels.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ls, err := poolgen.ReadLabels(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]poolgen.Label{}
	for _, l := range ls {
		out[l.Path] = l
	}
	return out
}

// TestDifficultyBuiltinOnSamplePool runs the difficulty stage with the
// built-in policy at temperature 1 on the sample pool's clean tasks: it
// solves some nl2bash-like tasks and, honestly, no kata (they need real
// Python code). A second run comes entirely from the ledger.
func TestDifficultyBuiltinOnSamplePool(t *testing.T) {
	sandboxtest.Parallel(t)
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-difficulty-")

	labels := sampleLabels(t)
	src, err := pool.Open(samplePool)
	if err != nil {
		t.Fatal(err)
	}
	// Every clean nl2bash task and three clean katas.
	name := filepath.Join(t.TempDir(), "subset.parquet")
	w, _ := pool.Create(name, pool.WriterOptions{})
	katas, shells := 0, 0
	src.Each(context.Background(), nil, func(rec pool.Record) error {
		l := labels[rec.Path]
		switch {
		case l.Defect != "":
		case l.Family == "nl2bash":
			shells++
			w.Write(rec.Path, rec.Blob)
		case l.Family == "kata" && katas < 3:
			katas++
			w.Write(rec.Path, rec.Blob)
		}
		return nil
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sub, _ := pool.Open(name)
	seed := int64(1)
	stage := filters.Difficulty{Runner: &trial.Runner{Backend: d}, Labels: map[string]string{sandbox.LabelRun: runID},
		Policy: builtin.New(1), PolicyID: "builtin/cold-start", Attempts: 3, Rule: filters.RuleBand, Lo: 0, Hi: 1, Exhaustive: true,
		Harness: agent.Config{MaxTurns: 6, Sampling: policy.Sampling{Temperature: 1, Seed: &seed}}}
	runDir := filepath.Join(t.TempDir(), "run")
	got := map[string]pipeline.Decision{}
	_, _, err = pipeline.Build(context.Background(), pipeline.BuildOptions{Source: sub, Stages: []pipeline.Stage{filters.Validate{}, stage},
		Workers: 2, RunDir: runDir, OnDecision: func(dec pipeline.Decision) { got[dec.Path] = dec }})
	if err != nil {
		t.Fatal(err)
	}
	var shellPasses, shellSolved, kataPasses float64
	for p, dec := range got {
		if dec.Stage != filters.StageDifficulty || dec.ScoreRate == nil {
			t.Errorf("%s: %s %s/%s %s (no pass rate)", p, dec.Stage, dec.Verdict, dec.Reason, dec.Detail)
			continue
		}
		t.Logf("%s (%s): pass rate %.2f, %s/%s: %s", p, labels[p].Family, *dec.ScoreRate, dec.Verdict, dec.Reason, dec.Detail)
		if labels[p].Family == "kata" {
			kataPasses += *dec.ScoreRate
		} else {
			shellPasses += *dec.ScoreRate
			if *dec.ScoreRate > 0 {
				shellSolved++
			}
		}
	}
	t.Logf("nl2bash: %d tasks, mean pass rate %.2f; katas: %d, mean %.2f", shells, shellPasses/float64(shells), katas, kataPasses/float64(katas))
	if kataPasses != 0 {
		t.Errorf("the built-in policy passed a kata: it cannot write Python functions, so a verifier is broken")
	}
	if shellSolved == 0 {
		t.Errorf("the built-in policy solved none of %d nl2bash tasks in 3 attempts each", shells)
	}

	// Resume: the same settings again cost no sandbox.
	again := map[string]pipeline.Decision{}
	sum, _, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: sub, Stages: []pipeline.Stage{filters.Validate{}, stage},
		Workers: 2, RunDir: runDir, OnDecision: func(dec pipeline.Decision) { again[dec.Path] = dec }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.LedgerHits != int64(len(got)) {
		t.Errorf("second run: %d ledger hits, want %d", sum.LedgerHits, len(got))
	}
	for p, dec := range got {
		if a := again[p]; a.Reason != dec.Reason || !sameRate(a.ScoreRate, dec.ScoreRate) {
			t.Errorf("%s: second run %s/%v, first %s/%v", p, a.Reason, a.ScoreRate, dec.Reason, dec.ScoreRate)
		}
	}
}

// sameRate compares two optional pass rates (a task that never got a rate,
// e.g. a build failure, has none in either run).
func sameRate(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
