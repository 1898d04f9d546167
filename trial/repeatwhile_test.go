package trial_test

import (
	"context"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/trial"
)

// TestRepeatWhile: the hook is asked before every repeat after the first;
// a no ends the session's repeats, a yes lets them run.
func TestRepeatWhile(t *testing.T) {
	d, runID := engine(t)
	task := synthetic(t, "repeat-while", "version = \"1.0\"\n",
		"#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n", "")
	for _, tc := range []struct {
		name      string
		whilePass bool // repeat only while the first run passed (it never does)
		results   int
		asked     int
	}{
		{"repeat only after a pass", true, 1, 1},
		{"repeat only after a failure", false, 4, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			r := &trial.Runner{Backend: d}
			res, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Nop, Repeats: 4,
				Labels: map[string]string{sandbox.LabelRun: runID},
				RepeatWhile: func(done []trial.Result) bool {
					asked++
					return done[0].Passed() == tc.whilePass
				}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != tc.results || asked != tc.asked {
				t.Errorf("%d results after %d questions, want %d after %d", len(res), asked, tc.results, tc.asked)
			}
		})
	}
}
