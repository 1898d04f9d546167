package train

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/trial"
)

// TestShuffleRewards: the shuffled-reward control permutes the scored
// rewards across the step (not only within a group), leaves excluded
// samples out, recomputes the advantages as RLOON over the permuted
// rewards, keeps the step's true reward metrics, and is a pure function of
// its seed.
func TestShuffleRewards(t *testing.T) {
	one, zero := 1.0, 0.0
	scored := func(r *float64) agent.Attempt {
		return agent.Attempt{Result: trial.Result{Outcome: trial.Scored, Reward: r}, Trajectory: &agent.Trajectory{End: agent.Completed}}
	}
	infra := agent.Attempt{Result: trial.Result{Outcome: trial.PolicyUnavailable}, Trajectory: &agent.Trajectory{}}
	// Group 0 all passed, group 1 all failed, group 2 mixed: the true
	// advantages are 0 in groups 0 and 1.
	build := func() []Sample {
		var s []Sample
		for g, rs := range [][]*float64{{&one, &one, &one, &one}, {&zero, &zero, &zero, &zero}, {&one, &zero, &zero, nil}} {
			for k, r := range rs {
				a := scored(r)
				if r == nil {
					a = infra
				}
				s = append(s, Sample{Task: string(rune('a' + g)), Group: g, Index: k, Attempt: a})
			}
		}
		return s
	}
	tests := []struct {
		name string
		seed uint64
	}{{"seed 1", 1}, {"seed 2", 2}, {"seed 3", 3}}
	moved := 0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			samples := build()
			var m Metrics
			score(&m, samples, 3, 2)
			truth := m
			truthRewards := rewardsOf(samples)
			shuffleRewards(&m, samples, 3, 2, rand.New(rand.NewPCG(tc.seed, 0)))

			got := rewardsOf(samples)
			a, b := slices.Clone(got), slices.Clone(truthRewards)
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Fatalf("rewards %v are not a permutation of %v", got, truthRewards)
			}
			if samples[11].Included || samples[11].Reward != 0 || samples[11].Advantage != 0 {
				t.Errorf("the excluded sample took part: %+v", samples[11])
			}
			if !slices.Equal(got[:4], truthRewards[:4]) {
				moved++ // a reward crossed groups: group 0 held only passes
			}
			// Advantages are RLOON of the permuted rewards.
			r, inc, g := make([]float64, len(samples)), make([]bool, len(samples)), make([]int, len(samples))
			for i, s := range samples {
				r[i], inc[i], g[i] = s.Reward, s.Included, s.Group
			}
			want, _ := RLOON(r, inc, g, 2)
			abs := 0.0
			for i, s := range samples {
				if math.Abs(s.Advantage-want[i]) > 1e-12 {
					t.Errorf("sample %d: advantage %g, want %g", i, s.Advantage, want[i])
				}
				abs += math.Abs(want[i])
			}
			if math.Abs(m.MeanAbsAdvantage-abs/float64(len(samples))) > 1e-12 {
				t.Errorf("mean |A| %g, want %g", m.MeanAbsAdvantage, abs/float64(len(samples)))
			}
			if m.MeanReward != truth.MeanReward || m.PassAt1 != truth.PassAt1 || !slices.Equal(m.Groups, truth.Groups) {
				t.Errorf("true reward metrics changed: %+v, want %+v", m, truth)
			}
			// Same seed, same permutation.
			again := build()
			var m2 Metrics
			score(&m2, again, 3, 2)
			shuffleRewards(&m2, again, 3, 2, rand.New(rand.NewPCG(tc.seed, 0)))
			if !slices.Equal(rewardsOf(again), got) {
				t.Error("the permutation is not a function of the seed")
			}
		})
	}
	if moved == 0 {
		t.Error("no seed moved a reward across groups: the control would keep the true signal")
	}
}

func rewardsOf(s []Sample) []float64 {
	out := make([]float64, len(s))
	for i := range s {
		out[i] = s[i].Reward
	}
	return out
}
