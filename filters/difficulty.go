package filters

import (
	"context"
	"fmt"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/trial"
)

// Keep rules of the difficulty stage.
const (
	// RuleSolvable is the reference recipe's rule: drop what the policy
	// never solves in k attempts (pass@k = 0).
	RuleSolvable = "solvable"
	// RuleBand keeps pass rates strictly between Lo and Hi, so RLOO
	// groups have reward variance.
	RuleBand = "band"
)

// Reasons of the difficulty stage.
const (
	ReasonSolved     = "solved"            // kept: pass@k > 0
	ReasonInBand     = "pass_rate_in_band" // kept: Lo < p < Hi
	ReasonUnsolved   = "never_solved"      // dropped: pass@k = 0
	ReasonTooHard    = "too_hard"          // dropped: p <= Lo
	ReasonTooEasy    = "too_easy"          // dropped: p >= Hi
	ReasonNoAttempts = "attempts_failed"   // undecided: too few attempts ran (infrastructure)
)

// Difficulty runs k attempts of a policy on each task through the agent
// harness and keeps tasks by their pass rate. It stops as soon as the
// remaining attempts cannot change the verdict (under the reference rule,
// at the first success), records the pass rate as the stage's score and
// the runs it spent, and caches the verdict in the ledger. Attempts lost to
// infrastructure (the sandbox or the model endpoint) are left out of the
// rate; a task with fewer than half of its attempts scored is undecided,
// not dropped.
type Difficulty struct {
	Runner   *trial.Runner
	Limits   bundle.Limits
	Labels   map[string]string
	Policy   policy.Policy
	PolicyID string // identifies the policy's weights for the ledger
	Harness  agent.Config
	Attempts int    // k; default 8
	Rule     string // RuleSolvable (default) or RuleBand
	Lo, Hi   float64
	// Exhaustive runs all k attempts even when the verdict is already
	// known (a full pass-rate estimate for every task).
	Exhaustive bool
	// Prior, when set, holds the attempts the flaky stage's policy prover
	// ran on a task; they stand for this stage's first attempts (the same
	// episode sessions) when they were drawn with the same policy and
	// harness settings, instead of being paid for again.
	Prior *AttemptLog
}

// Name implements pipeline.Stage.
func (Difficulty) Name() string { return StageDifficulty }

func (s Difficulty) resolved() Difficulty {
	if s.Attempts <= 0 {
		s.Attempts = 8
	}
	if s.Rule == "" {
		s.Rule = RuleSolvable
	}
	if s.Rule == RuleBand && s.Hi == 0 {
		s.Hi = 1
	}
	return s
}

// Validate checks the configuration.
func (s Difficulty) Validate() error {
	s = s.resolved()
	switch s.Rule {
	case RuleSolvable:
	case RuleBand:
		if !(s.Lo >= 0 && s.Lo < s.Hi && s.Hi <= 1) {
			return fmt.Errorf("difficulty band needs 0 <= lo < hi <= 1 (got %g, %g)", s.Lo, s.Hi)
		}
	default:
		return fmt.Errorf("difficulty rule must be %s or %s, not %q", RuleSolvable, RuleBand, s.Rule)
	}
	if s.Policy == nil {
		return fmt.Errorf("the difficulty stage needs a policy")
	}
	return nil
}

// Process implements pipeline.ItemStage.
func (s Difficulty) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	s = s.resolved()
	t, err := runnableTask(it, s.Limits)
	if err != nil {
		return pipeline.ErrorOutcome(ReasonTaskUnloadable, err.Error())
	}
	var passes, scored, infra, runs, reused int
	var lastInfra string
	var sp spend
	var prior []trial.Result
	if a, ok := s.Prior.take(it.Task.Hash, attemptSettings(s.PolicyID, s.Harness)+s.Runner.SettingsKey()); ok {
		prior = a.Results
	}
	for i := 0; i < s.Attempts; i++ {
		if !s.Exhaustive && s.decided(passes, scored, s.Attempts-i) {
			break
		}
		var r trial.Result
		if i < len(prior) {
			r = prior[i]
			reused++
		} else {
			h := &agent.Harness{Policy: s.Policy, Config: s.Harness, Session: attemptSession(t.Path, i)}
			res, err := s.Runner.Run(ctx, t, trial.Options{Actor: h, Repeats: 1, Labels: s.Labels})
			if err != nil {
				return pipeline.ErrorOutcome(ReasonStageInterrupted, err.Error())
			}
			sp.add(res)
			r = res[0]
		}
		runs++
		switch {
		case r.Infra():
			infra++
			lastInfra = fmt.Sprintf("%s: %s", r.Outcome, r.Detail)
		case r.Scored(): // a policy that ran out of time included: its reward stands
			scored++
			if r.Passed() {
				passes++
			}
		default: // the task itself is broken (build, verifier, reward file)
			return sp.attach(pipeline.DropOutcome(string(r.Outcome), fmt.Sprintf("%s (attempt %d of %s)", r.Detail, i+1, s.Policy.Name())))
		}
	}
	tally := fmt.Sprintf("%d of %d scored attempts passed (%s, %d runs, %d lost to infrastructure)", passes, scored, s.Policy.Name(), runs, infra)
	if reused > 0 {
		tally += fmt.Sprintf("; %d of the runs are the flaky stage's proof attempts, reused", reused)
	}
	if scored == 0 || (scored < (runs+1)/2 && infra > 0) {
		return sp.attach(pipeline.ErrorOutcome(ReasonNoAttempts, fmt.Sprintf("%s; last: %s", tally, lastInfra)))
	}
	rate := float64(passes) / float64(scored)
	out := s.verdict(passes, scored, tally)
	out.ScoreRate = &rate
	return sp.attach(out)
}

// decided reports whether left more attempts cannot change the verdict.
func (s Difficulty) decided(passes, scored, left int) bool {
	if scored == 0 {
		return false
	}
	if s.Rule == RuleSolvable {
		return passes > 0
	}
	lo := s.verdict(passes, scored+left, "").Verdict
	hi := s.verdict(passes+left, scored+left, "").Verdict
	return lo == hi && lo == s.verdict(passes, scored, "").Verdict
}

func (s Difficulty) verdict(passes, scored int, tally string) pipeline.Outcome {
	rate := float64(passes) / float64(scored)
	if s.Rule == RuleSolvable {
		if passes > 0 {
			return pipeline.KeepOutcome(ReasonSolved, tally)
		}
		return pipeline.DropOutcome(ReasonUnsolved, tally)
	}
	switch {
	case rate <= s.Lo:
		return pipeline.DropOutcome(ReasonTooHard, fmt.Sprintf("pass rate %.2f <= %.2f; %s", rate, s.Lo, tally))
	case rate >= s.Hi:
		return pipeline.DropOutcome(ReasonTooEasy, fmt.Sprintf("pass rate %.2f >= %.2f; %s", rate, s.Hi, tally))
	}
	return pipeline.KeepOutcome(ReasonInBand, fmt.Sprintf("pass rate %.2f in (%.2f, %.2f); %s", rate, s.Lo, s.Hi, tally))
}

// Expensive implements pipeline.Expensive: verdicts go to the ledger.
func (Difficulty) Expensive() {}

// Fingerprint implements pipeline.Fingerprinted.
func (s Difficulty) Fingerprint() string {
	s = s.resolved()
	h := s.Harness
	temp := h.Sampling.Temperature
	var seed int64
	if h.Sampling.Seed != nil {
		seed = *h.Sampling.Seed
	}
	return fmt.Sprintf("difficulty/v1 policy=%s k=%d rule=%s lo=%g hi=%g exhaustive=%t T=%g seed=%d turns=%d ctx=%d",
		s.PolicyID, s.Attempts, s.Rule, s.Lo, s.Hi, s.Exhaustive, temp, seed, h.MaxTurns, h.ContextTokens) + s.Runner.SettingsKey()
}
