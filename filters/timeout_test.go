package filters_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// slowPolicy writes its answer to /app/done and then starts a command
// that outlives the episode's deadline, every time: each of its episodes
// ends in the agent timeout after the work is done (or not, when it
// writes nothing).
type slowPolicy struct{ write bool }

func (p slowPolicy) Name() string { return "slow" }

func (p slowPolicy) Complete(context.Context, policy.Request) (policy.Completion, error) {
	type command struct {
		Keystrokes string  `json:"keystrokes"`
		Duration   float64 `json:"duration"`
	}
	cmds := []command{{"sleep 300\n", 60}}
	if p.write {
		cmds = append([]command{{"touch /app/done\n", 1}}, cmds...)
	}
	b, _ := json.Marshal(map[string]any{"analysis": "a", "plan": "p", "commands": cmds, "task_complete": false})
	return policy.Completion{Content: string(b), Model: "slow"}, nil
}

// TestDifficultyScoresAgentTimeouts: a policy that runs out of time is
// the policy's failure, not the task's. Its attempts are scored with the
// verifier's reward (a pass when the work was done before the deadline)
// and counted in the pass rate and the evidence; the task is neither
// dropped as defective nor left undecided.
func TestDifficultyScoresAgentTimeouts(t *testing.T) {
	sandboxtest.Parallel(t)
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-difficulty-timeout-")
	const check = "#!/bin/bash\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	task, err := trial.LoadTask("late", sbTask(t, "FROM debian:bookworm\nWORKDIR /app\n", check, "#!/bin/bash\ntouch /app/done\n"), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		write  bool
		reason string
		rate   float64
		passes int
	}{
		{true, filters.ReasonSolved, 1, 2},
		{false, filters.ReasonUnsolved, 0, 0},
	} {
		stage := filters.Difficulty{Runner: &trial.Runner{Backend: d}, Labels: map[string]string{sandbox.LabelRun: runID},
			Policy: slowPolicy{write: tc.write}, PolicyID: "slow", Attempts: 2, Exhaustive: true,
			Harness: agent.Config{Timeout: 3 * time.Second, MaxTurns: 4}}
		it := &pipeline.Item{Task: &pipeline.Task{Path: task.Path, Hash: task.Bundle.ContentHash}, Bundle: task.Bundle, Info: task.Info}
		out := stage.Process(context.Background(), it)
		t.Logf("write %t: %s/%s: %s; evidence %+v", tc.write, out.Verdict, out.Reason, out.Detail, out.Evidence)
		if out.Reason != tc.reason || out.ScoreRate == nil || *out.ScoreRate != tc.rate {
			t.Errorf("write %t: %s/%s score %v, want %s with pass rate %g", tc.write, out.Verdict, out.Reason, out.ScoreRate, tc.reason, tc.rate)
		}
		if ev := out.Evidence; ev == nil || ev.Runs != 2 || ev.Passes != tc.passes || ev.VerifierSeconds <= 0 {
			t.Errorf("write %t: evidence %+v, want 2 runs, %d passes and a verifier time", tc.write, ev, tc.passes)
		}
	}
}
