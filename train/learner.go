package train

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/policy/builtin"
)

// Learner turns a step's scored samples into a new policy version.
type Learner interface {
	// Version names the policy the next rollouts use.
	Version() string
	// Update learns from a step's samples (advantages set).
	Update(ctx context.Context, step int, samples []Sample) (UpdateStats, error)
	// Save writes a checkpoint at path (the learner picks the extension);
	// Restore loads it back into the live policy.
	Save(path string) error
	Restore(path string) error
}

// UpdateStats describe an update.
type UpdateStats struct {
	LogprobGap float64 // mean |behaviour − recomputed| log-probability per action, before the update
	Entropy    float64 // mean entropy per turn of the turns the bonus acts on, before the update
	GradNorm   float64
	Clipped    int
	VersionLag int
	LR         float64 // the learning rate applied (built-in policy)
}

// Builtin updates the built-in policy in process: a policy-gradient step
// on its log-linear weights with the action-mean PPO-clip loss
//
//	L = −(1/N) Σ_actions min(ρ·A, clip(ρ, 1−ε, 1+ε)·A) − β·(1/M) Σ_turns H(π(·|s)),
//	ρ = π(a|s)/π_behaviour(a|s),
//
// N the number of actions (turns) of the samples that carry signal (zero-
// advantage samples do not dilute it), A the sample's rloo_n advantage,
// π_behaviour the log-probabilities recorded at sampling time. With one
// epoch ρ = 1 and this is REINFORCE with a leave-one-out baseline; Epochs
// > 1 re-uses the batch and the clip bounds the drift. The optional
// entropy bonus (β = EntropyCoef) averages over the M turns of every
// included sample, zero-variance groups too: a group that always fails
// carries no advantage, and the bonus is what keeps its alternatives
// sampled. With EntropyFailedOnly the bonus acts only on the turns of
// groups where no attempt passed (still averaged over all M included
// turns, so β keeps its scale): a task the policy fails is pushed to try
// other commands, while the choices of tasks it solves are left to the
// policy gradient.
type Builtin struct {
	Policy      *builtin.Policy
	LR          float64
	Clip        float64 // ε; default 0.2
	Epochs      int     // default 1
	Temperature float64 // the rollout temperature (> 0)
	GradClip    float64 // max gradient L2 norm; 0 = none
	// AdaGrad scales each weight's step by its own gradient history
	// (builtin.Policy.UpdateAdaGrad) instead of a plain gradient step.
	AdaGrad bool
	// EntropyCoef is β of the entropy bonus; 0 = none.
	EntropyCoef float64
	// EntropyFailedOnly restricts the bonus to groups with no passing
	// attempt.
	EntropyFailedOnly bool
	// EntropyFloor > 0 applies the bonus only to decisions whose entropy
	// is below EntropyFloor × its maximum (builtin.Policy.EntropyBelow):
	// without it a bonus on failed groups can feed itself (a flatter
	// policy fails more, so more groups get the bonus) until the policy
	// is uniform.
	EntropyFloor float64
	// DecaySteps > 0 decays the learning rate linearly over the last
	// DecaySteps of TotalSteps (a warmup-free warmup-stable-decay
	// schedule): step TotalSteps−DecaySteps+i runs at
	// LR·(DecaySteps+1−i)/(DecaySteps+1), so the last step still moves.
	// The rate is a function of the step number alone, so a resumed run
	// uses the rates of an uninterrupted one.
	DecaySteps, TotalSteps int
}

// LRAt is the learning rate of step (1-based) under the schedule.
func (b *Builtin) LRAt(step int) float64 {
	if b.DecaySteps <= 0 || b.TotalSteps <= 0 {
		return b.LR
	}
	start := b.TotalSteps - b.DecaySteps // the last step at the full rate
	if step <= start {
		return b.LR
	}
	i := step - start
	if i > b.DecaySteps {
		i = b.DecaySteps
	}
	return b.LR * float64(b.DecaySteps+1-i) / float64(b.DecaySteps+1)
}

var _ Learner = (*Builtin)(nil)

// Version is the policy's update count.
func (b *Builtin) Version() string { return strconv.Itoa(b.Policy.Version()) }

// Save writes the weights as JSON.
func (b *Builtin) Save(path string) error { return b.Policy.Save(path + ".json") }

// Restore loads weights written by Save.
func (b *Builtin) Restore(path string) error { return b.Policy.Restore(path + ".json") }

type action struct {
	prefix    []policy.Message
	tokens    []int
	behaviour float64
	adv       float64
}

// Update implements Learner.
func (b *Builtin) Update(ctx context.Context, step int, samples []Sample) (UpdateStats, error) {
	st := UpdateStats{LR: b.LRAt(step)}
	if b.Temperature <= 0 {
		return st, fmt.Errorf("the built-in learner needs a sampling temperature > 0 (got %g)", b.Temperature)
	}
	clip, epochs := b.Clip, b.Epochs
	if clip <= 0 {
		clip = 0.2
	}
	if epochs <= 0 {
		epochs = 1
	}
	var acts, bonus []action // bonus: the turns the entropy bonus acts on
	var passed map[int]bool  // groups with a passing attempt (EntropyFailedOnly)
	if b.EntropyCoef != 0 && b.EntropyFailedOnly {
		passed = map[int]bool{}
		for _, s := range samples {
			if s.Included && s.Reward >= 1 {
				passed[s.Group] = true
			}
		}
	}
	included := 0 // turns, the bonus's denominator
	for _, s := range samples {
		tr := s.Attempt.Trajectory
		if !s.Included || tr == nil {
			continue
		}
		for i, turn := range tr.Turns {
			at := 2*i + 1
			if len(turn.Completion.TokenIDs) == 0 || at >= len(tr.Messages) || tr.Messages[at].Role != policy.RoleAssistant {
				continue
			}
			var lp float64
			for _, x := range turn.Completion.Logprobs {
				lp += x
			}
			a := action{prefix: tr.Messages[:at], tokens: turn.Completion.TokenIDs, behaviour: lp, adv: s.Advantage}
			included++
			if b.EntropyCoef != 0 && !passed[s.Group] {
				bonus = append(bonus, a)
			}
			if s.Advantage != 0 {
				acts = append(acts, a)
			}
		}
	}
	if len(acts) == 0 && len(bonus) == 0 {
		b.Policy.Update(nil, 0) // a new version all the same: steps and versions stay aligned
		return st, nil
	}
	n := float64(len(acts))
	floor := math.Inf(1) // the bonus's decisions: all, or those below EntropyFloor
	if b.EntropyFloor > 0 {
		floor = b.EntropyFloor
	}
	for e := 0; e < epochs; e++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		grad := builtin.Grad{}
		var gap float64
		for _, a := range acts {
			lp, err := b.Policy.LogProb(a.prefix, a.tokens, b.Temperature, nil, 0)
			if err != nil {
				return st, err
			}
			gap += math.Abs(lp - a.behaviour)
			ratio := math.Exp(math.Min(lp-a.behaviour, 20))
			if (a.adv > 0 && ratio > 1+clip) || (a.adv < 0 && ratio < 1-clip) {
				st.Clipped++
				continue
			}
			if _, err := b.Policy.LogProb(a.prefix, a.tokens, b.Temperature, grad, a.adv*ratio/n); err != nil {
				return st, err
			}
		}
		var ent float64
		for _, a := range bonus {
			h, err := b.Policy.EntropyBelow(a.prefix, a.tokens, b.Temperature, floor, grad, b.EntropyCoef/float64(included))
			if err != nil {
				return st, err
			}
			ent += h
		}
		if e == 0 {
			if n > 0 {
				st.LogprobGap = gap / n
			}
			if len(bonus) > 0 {
				st.Entropy = ent / float64(len(bonus))
			}
		}
		norm := gradNorm(grad)
		st.GradNorm = norm
		lr := st.LR
		if b.GradClip > 0 && norm > b.GradClip {
			lr *= b.GradClip / norm
		}
		if b.AdaGrad {
			b.Policy.UpdateAdaGrad(grad, lr)
		} else {
			b.Policy.Update(grad, lr)
		}
	}
	return st, nil
}

// gradNorm sums in key order, so the result (and any clipping it drives)
// is bit-for-bit reproducible.
func gradNorm(g builtin.Grad) float64 {
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var s float64
	for _, k := range keys {
		s += g[k] * g[k]
	}
	return math.Sqrt(s)
}
