package filters_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/poolgen"
)

// lintReason maps the generator's lint-stage defect kinds to lint codes.
var lintReason = map[string]string{
	poolgen.DefectTestsInImage:       filters.LintTestsInImage,
	poolgen.DefectNetworkVerifier:    filters.LintVerifierNetwork,
	poolgen.DefectInstructionReveals: filters.LintInstructionReveals,
	poolgen.DefectNoSolution:         filters.LintNoSolution,
}

// TestStaticStagesMatchGroundTruth generates a labelled pool with the
// default defect mix (lint kinds boosted) and checks every validate, dedup
// and lint decision against the labels: each codec or structure defect
// dropped by validate with exactly the expected reason, each duplicate set
// reduced to its first path, each lint defect dropped by lint with its
// code, and no other task dropped.
func TestStaticStagesMatchGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a 600-task pool")
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "pool.parquet")
	w, err := pool.Create(name, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]poolgen.Label{}
	var buf bytes.Buffer
	err = poolgen.Generate(context.Background(), poolgen.Options{N: 600, Seed: 11, Rates: boosted()}, func(task poolgen.Task) error {
		labels[task.Path] = task.Label
		blob := task.Blob
		if task.Entries != nil {
			buf.Reset()
			if err := bundle.Encode(&buf, task.Entries); err != nil {
				return err
			}
			blob = bytes.Clone(buf.Bytes())
		} else if blob == nil {
			blob = []byte{}
		}
		return w.WriteUnchecked(task.Path, blob)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	// Tighter limits than the defaults keep the injected bombs cheap; the
	// decoder's behaviour does not depend on the numbers.
	lim := bundle.Limits{MaxTotalBytes: 64 << 20, MaxMembers: 5000, MaxFileBytes: 1 << 30}
	// The generator's oracle family labels a missing solution a defect;
	// lint only warns about it by default (RL pools ship none), so ask.
	acts, err := filters.ParseLintActions("no_solution=drop")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := filters.Build([]string{"validate", "dedup", "lint"}, filters.Options{Limits: lim, Lint: acts})
	if err != nil {
		t.Fatal(err)
	}
	decided := map[string]map[string]pipeline.Decision{}
	_, _, err = pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, Limits: lim,
		OnDecision: func(d pipeline.Decision) {
			if decided[d.Path] == nil {
				decided[d.Path] = map[string]pipeline.Decision{}
			}
			decided[d.Path][d.Stage] = d
		}})
	if err != nil {
		t.Fatal(err)
	}

	// Which path of each duplicate set must survive: the first by path.
	keeper := map[string]string{} // original path -> kept path
	for p, l := range labels {
		if l.Defect == poolgen.DefectDuplicate {
			orig := l.DuplicateOf
			if cur, ok := keeper[orig]; !ok {
				keeper[orig] = min(orig, p)
			} else {
				keeper[orig] = min(cur, p)
			}
		}
	}
	dropsExpectedByDedup := map[string]bool{}
	for p, l := range labels {
		if l.Defect == poolgen.DefectDuplicate && keeper[l.DuplicateOf] != p {
			dropsExpectedByDedup[p] = true
		}
		if k, ok := keeper[p]; ok && k != p {
			dropsExpectedByDedup[p] = true
		}
	}

	var codec, dups, lints, good int
	for p, l := range labels {
		v := decided[p][filters.StageValidate]
		switch {
		case l.ExpectedStage == poolgen.StageValidate:
			codec++
			if v.Verdict != pipeline.Drop || v.Reason != l.ExpectedReason {
				t.Errorf("%s (%s): validate %s/%s, want drop/%s (%s)", p, l.Defect, v.Verdict, v.Reason, l.ExpectedReason, v.Detail)
			}
			continue
		case v.Verdict != pipeline.Keep:
			t.Errorf("%s (%q): validate dropped a well-formed task: %s %s", p, l.Defect, v.Reason, v.Detail)
			continue
		}
		d := decided[p][filters.StageDedup]
		if dropsExpectedByDedup[p] {
			dups++
			if d.Verdict != pipeline.Drop || d.Reason != filters.ReasonDuplicateContent {
				t.Errorf("%s: dedup %s/%s, want drop/duplicate_content", p, d.Verdict, d.Reason)
			}
			continue
		}
		if d.Verdict != pipeline.Keep {
			t.Errorf("%s (%q): dedup dropped a unique task: %s", p, l.Defect, d.Detail)
			continue
		}
		li := decided[p][filters.StageLint]
		switch want, isLint := lintReason[l.Defect]; {
		case isLint:
			lints++
			if li.Verdict != pipeline.Drop || li.Reason != want {
				t.Errorf("%s (%s): lint %s/%s, want drop/%s (%s)", p, l.Defect, li.Verdict, li.Reason, want, li.Detail)
			}
		case l.Defect == poolgen.DefectRewardMissing && li.Verdict == pipeline.Drop:
			// Caught statically, earlier than the sandbox would.
			if li.Reason != filters.LintNoRewardWrite {
				t.Errorf("%s (reward_missing): lint dropped it for %s", p, li.Reason)
			}
		default:
			good++
			if li.Verdict != pipeline.Keep {
				t.Errorf("%s (%q): lint dropped it: %s %s", p, l.Defect, li.Reason, li.Detail)
			}
		}
	}
	if codec < 20 || dups < 5 || lints < 20 {
		t.Fatalf("pool too clean to test anything: %d codec defects, %d duplicates, %d lint defects", codec, dups, lints)
	}
	t.Logf("%d codec/structure defects, %d duplicates, %d lint defects, %d others: all decided as labelled", codec, dups, lints, good)
}

// boosted is the default mix with the lint kinds at 2% each.
func boosted() poolgen.Rates {
	r := poolgen.DefaultRates()
	for k := range lintReason {
		r[k] = 0.02
	}
	return r
}
