package train

import (
	"context"
	"math"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/policy/builtin"
)

// warnPrompt is a first turn of a shell task the built-in policy has
// templates for.
var warnPrompt = []policy.Message{{Role: policy.RoleUser, Content: "You are an AI assistant...\n\nTask Description:\n" +
	"Count the lines of `/app/data/app.log` that contain `warn` in any letter case and write the count to `/output/result.txt`." +
	"\n\nCurrent terminal state:\nroot@sandbox:/app# "}}

// sampledGroup is one group of four one-turn attempts at warnPrompt,
// sampled from p at temperature 1, each included with reward.
func sampledGroup(t *testing.T, p *builtin.Policy, reward float64) []Sample {
	t.Helper()
	var out []Sample
	for i, session := range []string{"a", "b", "c", "d"} {
		c, err := p.Complete(context.Background(), policy.Request{Messages: warnPrompt, Sampling: policy.Sampling{Temperature: 1}, SessionID: session})
		if err != nil {
			t.Fatal(err)
		}
		tr := &agent.Trajectory{Messages: append(append([]policy.Message{}, warnPrompt...), policy.Message{Role: policy.RoleAssistant, Content: c.Content}),
			Turns: []agent.Turn{{Completion: c}}}
		out = append(out, Sample{Task: "t", Index: i, Attempt: agent.Attempt{Trajectory: tr}, Included: true, Reward: reward})
	}
	return out
}

// groupEntropy sums the entropy of the samples' choices under p.
func groupEntropy(t *testing.T, p *builtin.Policy, ss []Sample) float64 {
	t.Helper()
	var h float64
	for _, s := range ss {
		x, err := p.Entropy(warnPrompt, s.Attempt.Trajectory.Turns[0].Completion.TokenIDs, 1, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		h += x
	}
	return h
}

// TestEntropyBonusMovesZeroVarianceGroups: a batch whose every sample has
// advantage 0 (a group that always fails) leaves the policy alone without
// the bonus and raises the entropy of its choices with it.
func TestEntropyBonusMovesZeroVarianceGroups(t *testing.T) {
	for _, beta := range []float64{0, 0.5} {
		p := builtin.New(1)
		ss := sampledGroup(t, p, 0)
		before := groupEntropy(t, p, ss)
		st, err := (&Builtin{Policy: p, LR: 1, Temperature: 1, EntropyCoef: beta}).Update(context.Background(), 1, ss)
		if err != nil {
			t.Fatal(err)
		}
		after := groupEntropy(t, p, ss)
		switch {
		case beta == 0 && after != before:
			t.Errorf("no bonus: entropy moved %g → %g on zero-advantage samples", before, after)
		case beta > 0 && (after <= before || st.Entropy <= 0):
			t.Errorf("bonus %g: entropy %g → %g (reported %g)", beta, before, after, st.Entropy)
		}
	}
}

func TestLRAtSchedule(t *testing.T) {
	for _, tc := range []struct {
		decay, total, step int
		want               float64
	}{
		{0, 16, 16, 20}, // constant
		{4, 16, 12, 20}, // the last step at the full rate
		{4, 16, 13, 16}, // 20·4/5
		{4, 16, 16, 4},  // 20·1/5: the last step still moves
		{4, 16, 17, 4},  // past the end: the floor
		{16, 16, 1, 20 * 16 / 17.0},
		{20, 16, 1, 20 * 16 / 21.0}, // longer than the run: decays from before step 1
	} {
		b := &Builtin{LR: 20, DecaySteps: tc.decay, TotalSteps: tc.total}
		if got := b.LRAt(tc.step); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("decay %d of %d, step %d: lr %g, want %g", tc.decay, tc.total, tc.step, got, tc.want)
		}
	}
}

// TestEntropyBonusFailedGroupsOnly: with EntropyFailedOnly the bonus leaves
// a group whose attempts all passed alone (advantage 0 everywhere: the
// policy must not move) and raises the entropy of a group that all failed.
func TestEntropyBonusFailedGroupsOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reward float64
		moves  bool
	}{{"all passed", 1, false}, {"all failed", 0, true}} {
		p := builtin.New(1)
		ss := sampledGroup(t, p, tc.reward)
		before := groupEntropy(t, p, ss)
		if _, err := (&Builtin{Policy: p, LR: 1, Temperature: 1, EntropyCoef: 0.5, EntropyFailedOnly: true}).Update(context.Background(), 1, ss); err != nil {
			t.Fatal(err)
		}
		after := groupEntropy(t, p, ss)
		if moved := after != before; moved != tc.moves {
			t.Errorf("%s: entropy %g → %g, want moved=%v", tc.name, before, after, tc.moves)
		}
		if tc.moves && after <= before {
			t.Errorf("%s: entropy fell %g → %g", tc.name, before, after)
		}
	}
}
