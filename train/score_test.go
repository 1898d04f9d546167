package train

import (
	"math"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/trial"
)

// TestScoreKeepsAgentTimeoutsInTheBaseline: a policy attempt that ran out
// of time is scored as the runner reports it (outcome scored, the
// verifier's reward, a warning): it enters the RLOO baseline and the loss
// with its reward and counts as truncated, while infrastructure failures
// and defects from before the agent acted stay out with their reason. A
// defect of the verifier's run, which the agent can cause (a broken bash,
// a FIFO), is scored 0 (trial.Outcome.AfterAgent): failing that way never
// beats failing the task.
func TestScoreKeepsAgentTimeoutsInTheBaseline(t *testing.T) {
	one, zero := 1.0, 0.0
	attempt := func(o trial.Outcome, reward *float64, end agent.End) agent.Attempt {
		res := trial.Result{Agent: "builtin", Outcome: o, Reward: reward}
		if end == agent.AgentTimeout {
			res.Warnings = []string{"the agent hit its timeout (30s); the verifier's reward stands"}
		}
		return agent.Attempt{Result: res, Trajectory: &agent.Trajectory{End: end}}
	}
	samples := []Sample{
		{Task: "a", Group: 0, Index: 0, Attempt: attempt(trial.Scored, &one, agent.AgentTimeout)}, // did the work, then ran out of time
		{Task: "a", Group: 0, Index: 1, Attempt: attempt(trial.Scored, &zero, agent.AgentTimeout)},
		{Task: "a", Group: 0, Index: 2, Attempt: attempt(trial.Scored, &zero, agent.Completed)},
		{Task: "a", Group: 0, Index: 3, Attempt: attempt(trial.PolicyUnavailable, nil, agent.PolicyUnavailable)},
		{Task: "b", Group: 1, Index: 0, Attempt: attempt(trial.RewardMissing, nil, agent.Completed)},
		{Task: "b", Group: 1, Index: 1, Attempt: attempt(trial.Scored, &one, agent.AgentTimeout)},
		{Task: "b", Group: 1, Index: 2, Attempt: attempt(trial.BuildFailed, nil, agent.Completed)},
	}
	var m Metrics
	infra := score(&m, samples, 2, 2)

	// Group a: three scored rewards 1, 0, 0 (mean 1/3, n = 3): A = 3/2·(r − 1/3).
	want := []struct {
		included  bool
		exclusion string
		adv       float64
	}{
		{true, "", 1},
		{true, "", -0.5},
		{true, "", -0.5},
		{false, "policy_unavailable", 0},
		// Group b: rewards 0 (the missing reward) and 1: A = 2·(r − 1/2).
		{true, "", -1},
		{true, "", 1},
		{false, "task_defect:build_failed", 0},
	}
	for i, w := range want {
		s := samples[i]
		if s.Included != w.included || s.Exclusion != w.exclusion || math.Abs(s.Advantage-w.adv) > 1e-9 {
			t.Errorf("sample %s/%d: included %t (%q) advantage %g, want %t (%q) %g",
				s.Task, s.Index, s.Included, s.Exclusion, s.Advantage, w.included, w.exclusion, w.adv)
		}
	}
	if samples[4].ZeroedBy != string(trial.RewardMissing) || samples[4].Reward != 0 {
		t.Errorf("the missing reward: zeroed by %q, reward %g; want reward_missing, 0", samples[4].ZeroedBy, samples[4].Reward)
	}
	if infra != 1 || m.Truncated != 3 || m.Excluded != 2 || m.PassAt1 != 0.4 || m.PassAtK != 1 {
		t.Errorf("infra %d truncated %d excluded %d pass@1 %g pass@k %g, want 1, 3, 2, 0.4, 1", infra, m.Truncated, m.Excluded, m.PassAt1, m.PassAtK)
	}
	if g := m.Groups; g[0] != (GroupMetrics{Task: "a", Scored: 3, Passed: 1}) || g[1] != (GroupMetrics{Task: "b", Scored: 2, Passed: 1}) {
		t.Errorf("groups %+v", g)
	}
}
