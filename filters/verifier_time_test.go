package filters_test

import (
	"context"
	"testing"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
)

func TestVerifierTimeRelative(t *testing.T) {
	secs := []float64{0.3, 0.4, 0.35, 0.5, 6.0, 0.45, 2.1}
	var tasks []*pipeline.Task
	for i, s := range secs {
		s := s
		tasks = append(tasks, &pipeline.Task{Path: string(rune('a' + i)), Marks: []pipeline.StageMark{{Stage: filters.StageFlaky, Verdict: pipeline.Keep, Measure: &pipeline.MarkMeasure{ScoreSeconds: &s}}}})
	}
	tasks = append(tasks, &pipeline.Task{Path: "unmeasured"})
	outs, err := filters.VerifierTime{Factor: 5}.Decide(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	// median 0.45 s → limit max(5×0.45, 2 s) = 2.25 s: only the 6 s verifier goes.
	want := []pipeline.Verdict{pipeline.Keep, pipeline.Keep, pipeline.Keep, pipeline.Keep, pipeline.Drop, pipeline.Keep, pipeline.Keep, pipeline.Keep}
	for i, o := range outs {
		if o.Verdict != want[i] {
			t.Errorf("%s (%v): %s %s: %s", tasks[i].Path, o.ScoreSeconds, o.Verdict, o.Reason, o.Detail)
		}
	}
	if outs[4].Reason != filters.ReasonSlowRelative {
		t.Errorf("reason %s", outs[4].Reason)
	}
}

func TestStratifiedSelect(t *testing.T) {
	// 10 a, 6 b, 3 c, 1 d; target 10 → exact shares 5, 3, 1.5, 0.5 →
	// 5, 3, 1 + the largest remainder ties (c and d at 0.5: c is larger) → 5, 3, 2, 0.
	var tasks []*pipeline.Task
	for st, n := range map[string]int{"a": 10, "b": 6, "c": 3, "d": 1} {
		for i := 0; i < n; i++ {
			tasks = append(tasks, &pipeline.Task{Path: st + string(rune('0'+i)), Hash: st + string(rune('0'+i)), Stratum: st})
		}
	}
	for _, seed := range []int64{1, 2, 3} {
		outs, err := filters.Select{Target: 10, Seed: seed, Stratified: true}.Decide(context.Background(), tasks)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for i, o := range outs {
			if o.Verdict == pipeline.Keep {
				got[tasks[i].Stratum]++
			}
		}
		if got["a"] != 5 || got["b"] != 3 || got["c"] != 2 || got["d"] != 0 {
			t.Errorf("seed %d: kept per stratum %v, want a5 b3 c2 d0", seed, got)
		}
	}
	// A stratum smaller than its quota gives its seats to the best ranks.
	var small []*pipeline.Task
	for i := 0; i < 9; i++ {
		small = append(small, &pipeline.Task{Path: "x" + string(rune('0'+i)), Hash: "x" + string(rune('0'+i)), Stratum: "x"})
	}
	small = append(small, &pipeline.Task{Path: "y", Hash: "y", Stratum: "y"})
	outs, _ := filters.Select{Target: 6, Seed: 1, Stratified: true}.Decide(context.Background(), small)
	kept := 0
	for _, o := range outs {
		if o.Verdict == pipeline.Keep {
			kept++
		}
	}
	if kept != 6 {
		t.Errorf("kept %d, want exactly the target 6", kept)
	}
}
