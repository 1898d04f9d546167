package trial_test

import (
	"context"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/trial"
)

// TestStopWhenEndsTheSession: StopWhen ends a session's repeats after the
// first result it accepts; without it every repeat runs.
func TestStopWhenEndsTheSession(t *testing.T) {
	b, runID := engine(t)
	task := synthetic(t, "stopwhen", quickToml, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "")
	r := &trial.Runner{Backend: b}
	for _, c := range []struct {
		name string
		stop func(trial.Result) bool
		want int
	}{
		{"no StopWhen", nil, 4},
		{"stop on a pass", func(r trial.Result) bool { return r.Passed() }, 1},
		{"never", func(trial.Result) bool { return false }, 4},
	} {
		res, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Nop, Repeats: 4, StopWhen: c.stop,
			Labels: map[string]string{sandbox.LabelRun: runID}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != c.want {
			t.Errorf("%s: %d results, want %d", c.name, len(res), c.want)
		}
	}
}
