package filters

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/trial"
)

// Reasons of the flaky stage (trial outcomes are also used directly).
const (
	ReasonOraclePasses         = "oracle_passes"
	ReasonNopPasses            = "nop_passes"
	ReasonOracleFails          = "oracle_fails"
	ReasonFlakyVerifier        = "flaky_verifier"
	ReasonFlakySolutionOrEnv   = "flaky_solution_or_environment"
	ReasonSlowVerifier         = "slow_verifier"
	ReasonNonBinaryOracleScore = "oracle_partial_reward"
)

// Flaky is the verifier gate. A task is kept only when the nop agent
// scores 0 and the oracle scores 1 in every one of Repeats verifier runs,
// spread over Sessions fresh sandboxes (re-runs on one post-solution state
// separate verifier flakiness from solution or environment flakiness), with
// every verifier run faster than MaxVerify. It stops at the first
// disagreement: a broken task costs few runs, a good one the full budget.
type Flaky struct {
	Runner    *trial.Runner
	Limits    bundle.Limits
	Repeats   int           // oracle verifier runs in total; default 9 (detects a 30% flake with 97% probability)
	Sessions  int           // fresh sandboxes they are spread over (at least 2 runs each); default 2
	MaxVerify time.Duration // slow-verifier threshold; default 20 s
	Labels    map[string]string
	Prover    Prover // positive evidence without an oracle (nil: none)
}

// Name implements pipeline.Stage.
func (Flaky) Name() string { return StageFlaky }

// Process implements pipeline.ItemStage.
func (s Flaky) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	var sp spend
	return sp.attach(s.decide(ctx, it, &sp))
}

func (s Flaky) decide(ctx context.Context, it *pipeline.Item, sp *spend) pipeline.Outcome {
	if s.Repeats <= 0 {
		s.Repeats = 9
	}
	if s.Sessions <= 0 {
		s.Sessions = 2
	}
	s.Sessions = min(s.Sessions, s.Repeats)
	if s.MaxVerify <= 0 {
		s.MaxVerify = 20 * time.Second
	}
	t, err := runnableTask(it, s.Limits)
	if err != nil {
		return pipeline.ErrorOutcome(ReasonTaskUnloadable, err.Error())
	}
	opts := trial.Options{Labels: s.Labels, StopOnDisagreement: true, VerifierTimeoutCap: 3 * s.MaxVerify}
	var runs, sandboxes int
	var verifyTimes []float64
	tally := func() string {
		return fmt.Sprintf("%d verifier runs in %d sandboxes", runs, sandboxes)
	}

	// Negative control first: it is cheaper than the oracle and catches
	// verifiers that pass anything.
	opts.Agent, opts.Repeats = trial.Nop, 1
	nop, err := s.Runner.Run(ctx, t, opts)
	if err != nil {
		return pipeline.ErrorOutcome(ReasonStageInterrupted, err.Error())
	}
	runs, sandboxes = runs+len(nop), sandboxes+1
	sp.add(nop)
	if out, stop := s.check(nop[0], &verifyTimes, tally); stop {
		return out
	}
	if *nop[0].Reward != 0 {
		return pipeline.DropOutcome(ReasonNopPasses, fmt.Sprintf("the nop agent scored %g (want 0); %s", *nop[0].Reward, tally()))
	}

	opts.Agent = trial.Oracle
	var first *float64
	for i := 0; i < s.Sessions; i++ {
		opts.Repeats = s.Repeats / s.Sessions
		if i < s.Repeats%s.Sessions {
			opts.Repeats++
		}
		// At least two runs per sandbox: a fresh sandbox that disagrees
		// with the first is only blamed on the solution or environment
		// when its own verifier re-run agrees with itself.
		opts.Repeats = max(opts.Repeats, 2)
		res, err := s.Runner.Run(ctx, t, opts)
		if err != nil {
			return pipeline.ErrorOutcome(ReasonStageInterrupted, err.Error())
		}
		runs, sandboxes = runs+len(res), sandboxes+1
		sp.add(res)
		var ones, zeros int
		for _, r := range res {
			if out, stop := s.check(r, &verifyTimes, tally); stop {
				return out
			}
			switch *r.Reward {
			case 1:
				ones++
			case 0:
				zeros++
			default:
				return pipeline.DropOutcome(ReasonNonBinaryOracleScore, fmt.Sprintf("the oracle scored %g; %s", *r.Reward, tally()))
			}
		}
		switch {
		case ones > 0 && zeros > 0:
			return pipeline.DropOutcome(ReasonFlakyVerifier, fmt.Sprintf(
				"re-running the verifier on one post-solution state gave %d× 1 and %d× 0 (session %d); %s", ones, zeros, i+1, tally()))
		case first == nil && zeros > 0:
			return pipeline.DropOutcome(ReasonOracleFails, fmt.Sprintf("the oracle scored 0 in %d of %d runs; %s", zeros, len(res), tally()))
		case first != nil && *first != *res[0].Reward:
			return pipeline.DropOutcome(ReasonFlakySolutionOrEnv, fmt.Sprintf(
				"the oracle scored %g in session 1 but %g in a fresh sandbox (session %d), each verifier consistent; %s", *first, *res[0].Reward, i+1, tally()))
		}
		first = res[0].Reward
	}
	med := median(verifyTimes)
	out := pipeline.KeepOutcome(ReasonOraclePasses, fmt.Sprintf("nop 0, oracle 1 in every run; test.sh median %.2fs; %s", med, tally()))
	out.ScoreSeconds = &med // the verifier_time stage compares it with the pool's
	return out
}

// check turns a non-scored or slow run into the task's verdict.
func (s Flaky) check(r trial.Result, times *[]float64, tally func() string) (pipeline.Outcome, bool) {
	switch {
	case r.Infra():
		return pipeline.ErrorOutcome(string(r.Outcome), r.Detail), true
	case r.Outcome == trial.VerifierTimeout:
		return pipeline.DropOutcome(ReasonSlowVerifier, fmt.Sprintf("%s (cap %s); %s", r.Detail, 3*s.MaxVerify, tally())), true
	case r.TaskDefect():
		return pipeline.DropOutcome(string(r.Outcome), fmt.Sprintf("%s (%s agent); %s", r.Detail, r.Agent, tally())), true
	case r.Durations.Verifier > s.MaxVerify.Seconds():
		return pipeline.DropOutcome(ReasonSlowVerifier, fmt.Sprintf("test.sh took %.1fs (limit %s); %s", r.Durations.Verifier, s.MaxVerify, tally())), true
	}
	*times = append(*times, r.Durations.Verifier)
	return pipeline.Outcome{}, false
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// Expensive implements pipeline.Expensive: flaky outcomes go to the ledger.
func (Flaky) Expensive() {}

// Fingerprint implements pipeline.Fingerprinted: the settings that change
// the verdict (defaults resolved as Process resolves them).
func (s Flaky) Fingerprint() string {
	r, n, v := s.Repeats, s.Sessions, s.MaxVerify
	if r <= 0 {
		r = 9
	}
	if n <= 0 {
		n = 2
	}
	if v <= 0 {
		v = 20 * time.Second
	}
	return fmt.Sprintf("flaky/v2 repeats=%d sessions=%d verifier<=%s", r, min(n, r), v) + s.Runner.SettingsKey()
}
