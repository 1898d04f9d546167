package filters

import (
	"context"
	"fmt"
	"sort"
	"strings"
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
	// ReasonSolutionPasses keeps a task whose supplied solution (see
	// Solutions) scored 1 in every run: proof "supplied".
	ReasonSolutionPasses = "solution_passes"
	// ReasonSolutionFails drops a task whose supplied solution scored 0
	// (consistently): the verifier rejects a known solution.
	ReasonSolutionFails = "solution_fails"
	// ReasonPolicySolves keeps a task the Prover solved: proof "policy".
	ReasonPolicySolves = "policy_solves"
	// ReasonVerifierUnproven keeps a task with no positive evidence: its
	// verifier passed the negative side, but nothing showed that a state
	// it scores 1 exists (proof "none").
	ReasonVerifierUnproven = "verifier_unproven"
	// ReasonUnproven drops such a task when Flaky.RequireProof is set.
	ReasonUnproven = "unproven"
)

// Flaky defaults.
const (
	DefaultFlakyRepeats = 9 // positive-side verifier runs
	DefaultNopRepeats   = 5 // negative-side verifier runs
	defaultSessions     = 2
	defaultMaxVerify    = 20 * time.Second
)

// Flaky is the verifier gate. It judges every task by the evidence it can
// get and records which (pipeline.Outcome.Proof):
//
// Negative side, always: the untouched environment (the nop agent) is
// verified NopRepeats times over NopSessions fresh sandboxes. Every run
// must be scored, faster than MaxVerify, give reward 0 and agree with the
// others. Any run that scores non-zero drops the task: nop_passes when
// every run so far scored the same, flaky_verifier when the runs on the
// untouched state disagree. A session stops at its first disagreement or
// its first unscored or slow run, and no further session starts once one
// run scored non-zero, so a verifier that passes everything costs one
// sandbox (and its session's runs: 3 by default, which tell nop_passes
// from flaky_verifier), a broken one a single run. Detection: a verifier that
// passes the untouched environment with probability p, independently per
// run, escapes only when all NopRepeats runs score 0, with probability
// (1-p)^NopRepeats; for p = 0.5 and the default 5 runs that is 1/32, so it
// is caught 96.9% of the time (≥ 90% needs 4 runs: 93.8%). A coin tossed
// once per sandbox (at start) is seen only NopSessions times: 75% with the
// default 2.
//
// Positive side, the first evidence available: the bundle's oracle
// (solution/solve.sh; proof "oracle"), else a solution supplied beside the
// pool (Solutions; proof "supplied"), run exactly as the oracle. It must
// score 1 in every one of Repeats runs spread over Sessions fresh
// sandboxes (re-runs on one post-solution state separate verifier
// flakiness from solution or environment flakiness), every run faster than
// MaxVerify, stopping at the first disagreement. Else, when Prover is set,
// a policy attempts the task (proof "policy"; its Verdict decides when
// set). Else the task is kept as verifier_unproven (proof "none"), or
// dropped as unproven with RequireProof.
type Flaky struct {
	Runner      *trial.Runner
	Limits      bundle.Limits
	Repeats     int           // positive-side verifier runs in total; default 9 (detects a 30% flake with 97% probability)
	Sessions    int           // fresh sandboxes they are spread over (at least 2 runs each); default 2
	NopRepeats  int           // negative-side verifier runs in total; default 5
	NopSessions int           // fresh sandboxes they are spread over; default 2
	MaxVerify   time.Duration // slow-verifier threshold; default 20 s
	Labels      map[string]string
	// Solutions are where solutions of tasks without an oracle are found.
	Solutions Solutions
	// RequireProof drops tasks without positive evidence as unproven
	// instead of keeping them as verifier_unproven.
	RequireProof bool
	Prover       Prover // positive evidence without an oracle (nil: none)
}

// Name implements pipeline.Stage.
func (Flaky) Name() string { return StageFlaky }

// withDefaults resolves the defaults, as Process and Fingerprint see them.
func (s Flaky) withDefaults() Flaky {
	if s.Repeats <= 0 {
		s.Repeats = DefaultFlakyRepeats
	}
	if s.Sessions <= 0 {
		s.Sessions = defaultSessions
	}
	s.Sessions = min(s.Sessions, s.Repeats)
	if s.NopRepeats <= 0 {
		s.NopRepeats = DefaultNopRepeats
	}
	if s.NopSessions <= 0 {
		s.NopSessions = defaultSessions
	}
	s.NopSessions = min(s.NopSessions, s.NopRepeats)
	if s.MaxVerify <= 0 {
		s.MaxVerify = defaultMaxVerify
	}
	return s
}

// Process implements pipeline.ItemStage.
func (s Flaky) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	var sp spend
	return sp.attach(s.withDefaults().decide(ctx, it, &sp))
}

// gate is one task's pass through the stage: the runs it paid for, by
// side, for the decision's detail.
type gate struct {
	s          Flaky
	sp         *spend
	times      []float64 // test.sh seconds of the runs that count
	nopRuns    int
	nopBoxes   int
	posRuns    int
	posBoxes   int
	posName    string // "oracle", "supplied solution", "policy"
	policyRuns int
}

// tally says which runs stood behind the verdict.
func (g *gate) tally() string {
	parts := []string{fmt.Sprintf("nop: %d verifier runs in %d sandboxes", g.nopRuns, g.nopBoxes)}
	if g.posRuns > 0 || g.posBoxes > 0 {
		parts = append(parts, fmt.Sprintf("%s: %d verifier runs in %d sandboxes", g.posName, g.posRuns, g.posBoxes))
	}
	if g.policyRuns > 0 {
		parts = append(parts, fmt.Sprintf("policy: %d runs", g.policyRuns))
	}
	return strings.Join(parts, "; ")
}

func (s Flaky) decide(ctx context.Context, it *pipeline.Item, sp *spend) pipeline.Outcome {
	t, err := runnableTask(it, s.Limits)
	if err != nil {
		return pipeline.ErrorOutcome(ReasonTaskUnloadable, err.Error())
	}
	g := &gate{s: s, sp: sp}
	proof, pos := ProofNone, t
	var problems []string
	switch {
	case t.Info.HasSolution:
		proof, g.posName = ProofOracle, "oracle"
	default:
		var sol *suppliedSolution
		sol, problems = s.Solutions.find(it, s.Limits)
		if sol != nil {
			proof, g.posName, pos = ProofSupplied, "supplied solution ("+sol.from+")", withSolution(t, sol)
		}
	}
	out := g.judge(ctx, it, t, pos, proof)
	if len(problems) > 0 {
		out.Flags = append(out.Flags, FlagSolutionUnreadable)
		out.Detail += "; unusable supplied solution: " + strings.Join(problems, "; ")
	}
	return out
}

// judge runs the negative side, then the positive evidence the task has.
func (g *gate) judge(ctx context.Context, it *pipeline.Item, t, pos *trial.Task, proof string) pipeline.Outcome {
	s := g.s
	withProof := func(o pipeline.Outcome, p string) pipeline.Outcome {
		if o.Verdict != pipeline.Error {
			o.Proof = p
		}
		return o
	}
	if out, stop := g.negative(ctx, t); stop {
		return withProof(out, proof)
	}
	switch {
	case proof != ProofNone:
		return withProof(g.positive(ctx, pos, proof), proof)
	case s.Prover != nil:
		pp, err := s.Prover.Prove(ctx, it, t)
		g.addPolicy(pp.Runs)
		if err != nil {
			return pipeline.ErrorOutcome(ReasonStageInterrupted, err.Error())
		}
		if pp.Verdict.Verdict != "" {
			out := pp.Verdict
			out.Detail = joinDetail(out.Detail, g.tally())
			return withProof(out, ProofPolicy)
		}
		if pp.Solved {
			out := pipeline.KeepOutcome(ReasonPolicySolves, joinDetail(pp.Detail, g.tally()))
			med := median(g.times)
			out.ScoreSeconds = &med
			return withProof(out, ProofPolicy)
		}
		return withProof(g.unproven("the policy did not prove it solvable ("+pp.Detail+")"), ProofNone)
	}
	return withProof(g.unproven("no oracle, no usable supplied solution, no policy configured"), ProofNone)
}

// unproven is the verdict on a task with only negative evidence.
func (g *gate) unproven(why string) pipeline.Outcome {
	var out pipeline.Outcome
	what := fmt.Sprintf("the untouched environment scored 0 in all %d runs, but nothing showed a state the verifier scores 1: %s; %s", g.nopRuns, why, g.tally())
	if g.s.RequireProof {
		return pipeline.DropOutcome(ReasonUnproven, what+" (--require-proof)")
	}
	out = pipeline.KeepOutcome(ReasonVerifierUnproven, what)
	med := median(g.times)
	out.ScoreSeconds = &med // the verifier_time stage compares it with the pool's
	return out
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// negative verifies the untouched environment (see Flaky); stop reports
// that out is the task's verdict.
func (g *gate) negative(ctx context.Context, t *trial.Task) (out pipeline.Outcome, stop bool) {
	s := g.s
	opts := trial.Options{Labels: s.Labels, StopOnDisagreement: true, StopWhen: s.decisive, VerifierTimeoutCap: 3 * s.MaxVerify, Agent: trial.Nop}
	var rewards []float64 // every scored run, in order
	for i := 0; i < s.NopSessions; i++ {
		opts.Repeats = share(s.NopRepeats, s.NopSessions, i)
		res, err := s.Runner.Run(ctx, t, opts)
		if err != nil {
			return pipeline.ErrorOutcome(ReasonStageInterrupted, err.Error()), true
		}
		g.nopRuns, g.nopBoxes = g.nopRuns+len(res), g.nopBoxes+1
		g.sp.add(res)
		for _, r := range res {
			if out, stop := g.check(r); stop {
				return out, true
			}
			rewards = append(rewards, *r.Reward)
		}
		nonzero := 0
		for _, r := range rewards {
			if r != 0 {
				nonzero++
			}
		}
		switch {
		case nonzero == 0:
			continue
		case nonzero == len(rewards) && allEqual(rewards):
			return pipeline.DropOutcome(ReasonNopPasses, fmt.Sprintf("the untouched environment (nop agent) scored %g in every run (want 0); %s", rewards[0], g.tally())), true
		default:
			return pipeline.DropOutcome(ReasonFlakyVerifier, fmt.Sprintf(
				"verifier runs on the untouched environment disagree: rewards %s (session %d); %s", fmtRewards(rewards), i+1, g.tally())), true
		}
	}
	return pipeline.Outcome{}, false
}

// share is session i's part of n runs over k sessions.
func share(n, k, i int) int {
	r := n / k
	if i < n%k {
		r++
	}
	return r
}

func allEqual(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

func fmtRewards(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%g", x)
	}
	return strings.Join(parts, ",")
}

// positive runs the oracle, or a supplied solution as the oracle, Repeats
// times over Sessions fresh sandboxes.
func (g *gate) positive(ctx context.Context, t *trial.Task, proof string) pipeline.Outcome {
	s := g.s
	name, passes, fails := "the oracle", ReasonOraclePasses, ReasonOracleFails
	if proof == ProofSupplied {
		name, passes, fails = "the "+g.posName, ReasonSolutionPasses, ReasonSolutionFails
	}
	opts := trial.Options{Labels: s.Labels, StopOnDisagreement: true, StopWhen: s.decisive, VerifierTimeoutCap: 3 * s.MaxVerify, Agent: trial.Oracle}
	var first *float64
	for i := 0; i < s.Sessions; i++ {
		// At least two runs per sandbox: a fresh sandbox that disagrees
		// with the first is only blamed on the solution or environment
		// when its own verifier re-run agrees with itself.
		opts.Repeats = max(share(s.Repeats, s.Sessions, i), 2)
		res, err := s.Runner.Run(ctx, t, opts)
		if err != nil {
			return pipeline.ErrorOutcome(ReasonStageInterrupted, err.Error())
		}
		g.posRuns, g.posBoxes = g.posRuns+len(res), g.posBoxes+1
		g.sp.add(res)
		var ones, zeros int
		for _, r := range res {
			if out, stop := g.check(r); stop {
				return out
			}
			switch *r.Reward {
			case 1:
				ones++
			case 0:
				zeros++
			default:
				return pipeline.DropOutcome(ReasonNonBinaryOracleScore, fmt.Sprintf("%s scored %g; %s", name, *r.Reward, g.tally()))
			}
		}
		switch {
		case ones > 0 && zeros > 0:
			return pipeline.DropOutcome(ReasonFlakyVerifier, fmt.Sprintf(
				"re-running the verifier on one post-solution state gave %d× 1 and %d× 0 (session %d); %s", ones, zeros, i+1, g.tally()))
		case first == nil && zeros > 0:
			return pipeline.DropOutcome(fails, fmt.Sprintf("%s scored 0 in %d of %d runs; %s", name, zeros, len(res), g.tally()))
		case first != nil && *first != *res[0].Reward:
			return pipeline.DropOutcome(ReasonFlakySolutionOrEnv, fmt.Sprintf(
				"%s scored %g in session 1 but %g in a fresh sandbox (session %d), each verifier consistent; %s", name, *first, *res[0].Reward, i+1, g.tally()))
		}
		first = res[0].Reward
	}
	med := median(g.times)
	out := pipeline.KeepOutcome(passes, fmt.Sprintf("nop 0, %s 1 in every run; test.sh median %.2fs; %s", name, med, g.tally()))
	out.ScoreSeconds = &med // the verifier_time stage compares it with the pool's
	return out
}

// addPolicy accounts the prover's runs. They come from several sessions
// (attempts, re-verifications of one attempt's state, replays); a result
// with Repeat 0 starts a session, so each session's build, start and
// teardown are counted once.
func (g *gate) addPolicy(runs []trial.Result) {
	g.policyRuns += len(runs)
	for start := 0; start < len(runs); {
		end := start + 1
		for end < len(runs) && runs[end].Repeat > 0 {
			end++
		}
		g.sp.add(runs[start:end])
		start = end
	}
	for _, r := range runs {
		if r.Scored() {
			g.times = append(g.times, r.Durations.Verifier)
		}
	}
}

// decisive reports a run that decides the task alone (see check), so its
// session runs no further repeats.
func (s Flaky) decisive(r trial.Result) bool {
	return !r.Scored() || r.Durations.Verifier > s.MaxVerify.Seconds()
}

// check turns a non-scored or slow run into the task's verdict.
func (g *gate) check(r trial.Result) (pipeline.Outcome, bool) {
	s := g.s
	switch {
	case r.Infra():
		return pipeline.ErrorOutcome(string(r.Outcome), r.Detail), true
	case r.Outcome == trial.VerifierTimeout:
		return pipeline.DropOutcome(ReasonSlowVerifier, fmt.Sprintf("%s (cap %s); %s", r.Detail, 3*s.MaxVerify, g.tally())), true
	case r.TaskDefect():
		return pipeline.DropOutcome(string(r.Outcome), fmt.Sprintf("%s (%s agent); %s", r.Detail, r.Agent, g.tally())), true
	case r.Durations.Verifier > s.MaxVerify.Seconds():
		return pipeline.DropOutcome(ReasonSlowVerifier, fmt.Sprintf("test.sh took %.1fs (limit %s); %s", r.Durations.Verifier, s.MaxVerify, g.tally())), true
	}
	g.times = append(g.times, r.Durations.Verifier)
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
// every task's verdict (defaults resolved as Process resolves them). v3:
// the negative side runs NopRepeats times and tasks without an oracle are
// judged (v2 entries must not be served with the new semantics).
func (s Flaky) Fingerprint() string {
	s = s.withDefaults()
	return fmt.Sprintf("flaky/v3 repeats=%d sessions=%d nop=%d/%d verifier<=%s", s.Repeats, s.Sessions, s.NopRepeats, s.NopSessions, s.MaxVerify) +
		s.Runner.SettingsKey()
}

// ItemFingerprint implements pipeline.ItemFingerprinted: what decides a
// task's verdict beside its content and the shared settings. Nothing for
// a task with an oracle; for one without, the usable solution the user
// supplied (its sha256), else the prover's settings and RequireProof
// (with an unusable supplied solution's hash, so fixing it re-decides the
// task). Discovered
// solutions (Solutions.Store) are not part of it: a rerun of the run that
// discovered one is served from the ledger.
func (s Flaky) ItemFingerprint(it *pipeline.Item) string {
	if it.Info != nil && it.Info.HasSolution {
		return ""
	}
	fp := "no-oracle"
	if blob, _, err := s.Solutions.userSolution(it); err == nil && blob != nil {
		sum := sha256sum(blob)
		if _, err := decodeSolution(blob, s.Limits); err == nil {
			return "supplied=" + sum[:16]
		}
		fp += " unusable=" + sum[:16]
	}
	if s.Prover != nil {
		fp += " prover=" + s.Prover.Fingerprint()
	}
	if s.RequireProof {
		fp += " require-proof"
	}
	return fp
}
