package filters

import (
	"testing"

	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/trial"
)

// TestSpendCountsScoredRunsOnly: the evidence's passes and verifier time
// come from scored runs. A policy's attempt that ran out of time is scored
// (its reward stands); the oracle's solve timeout is a task defect even
// though its verifier ran and wrote 1; infrastructure failures count
// nothing but the run.
func TestSpendCountsScoredRunsOnly(t *testing.T) {
	one, zero := 1.0, 0.0
	run := func(agent trial.Agent, o trial.Outcome, reward *float64, verifier float64) []trial.Result {
		return []trial.Result{{Agent: agent, Outcome: o, Reward: reward, Sandboxes: 1,
			Durations: trial.Durations{Start: 1, Verify: verifier + 0.5, Verifier: verifier}}}
	}
	cases := []struct {
		name       string
		sessions   [][]trial.Result
		runs, pass int
		verifier   float64
	}{
		{"policy timeout scored", [][]trial.Result{
			run("builtin", trial.Scored, &one, 3), // as the runner reports a policy timeout: scored, with a warning
			run("builtin", trial.Scored, &zero, 2),
			run("builtin", trial.Scored, &one, 4),
		}, 3, 2, 3},
		{"oracle solve timeout is a defect", [][]trial.Result{
			run(trial.Oracle, trial.Scored, &one, 2),
			run(trial.Oracle, trial.SolveTimeout, &one, 90),
			run(trial.Oracle, trial.SolveTimeout, &one, 80),
		}, 3, 1, 2},
		{"infrastructure", [][]trial.Result{
			run("builtin", trial.PolicyUnavailable, nil, 0),
			run("builtin", trial.Scored, &one, 5),
		}, 2, 1, 5},
	}
	for _, tc := range cases {
		var sp spend
		for _, s := range tc.sessions {
			sp.add(s)
		}
		ev := sp.attach(pipeline.DropOutcome("x", "")).Evidence
		if ev.Runs != tc.runs || ev.Passes != tc.pass || ev.VerifierSeconds != tc.verifier {
			t.Errorf("%s: runs %d passes %d verifier %gs, want %d, %d, %gs", tc.name, ev.Runs, ev.Passes, ev.VerifierSeconds, tc.runs, tc.pass, tc.verifier)
		}
	}
}
