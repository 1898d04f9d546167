package trial

import "fmt"

// Outcome classifies a trial. Exactly one applies. The set is shared by
// every stage that runs tasks (env, flaky, difficulty) and by the trainer,
// which read it only through Result's predicates (Scored, Passed,
// TaskDefect, Infra).
type Outcome string

// The scored outcome: the verifier produced a valid, finite reward (for a
// Probe, which runs no verifier: the environment built and started).
const Scored Outcome = "scored"

// Task defects: the task, not the machine, is at fault.
const (
	BuildFailed          Outcome = "build_failed"
	BuildTimeout         Outcome = "build_timeout"
	BuildNeedsNetwork    Outcome = "build_needs_network" // failed offline: registry or package download
	EnvironmentUnhealthy Outcome = "environment_unhealthy"
	UnsupportedEnv       Outcome = "unsupported_environment"
	NoSolution           Outcome = "no_solution"
	// SolveTimeout: the reference solution (the oracle's solve.sh) ran past
	// the agent timeout. Only the oracle's results carry it; see
	// TimeoutIsDefect.
	SolveTimeout         Outcome = "solve_timeout"
	VerifierTimeout      Outcome = "verifier_timeout"
	RewardMissing        Outcome = "reward_missing"
	RewardInvalid        Outcome = "reward_invalid"
	RewardAmbiguous      Outcome = "reward_ambiguous"
	VerifierNeedsNetwork Outcome = "verifier_needs_network"
	// StorageExceeded: the sandbox wrote past the task's storage_mb and
	// was ended (sandbox.LimitError). Only the reference's and the
	// control's results carry it; see applyLimit.
	StorageExceeded Outcome = "storage_exceeded"
)

// Infrastructure failures: retried, never recorded against the task.
const (
	EngineUnavailable Outcome = "engine_unavailable"
	OutOfDisk         Outcome = "out_of_disk"
	InfraError        Outcome = "infra_error"
	// PolicyUnavailable: the agent's model backend could not answer.
	PolicyUnavailable Outcome = "policy_unavailable"
)

// IsInfra reports whether the outcome is a failure of the machine.
func (o Outcome) IsInfra() bool {
	switch o {
	case EngineUnavailable, OutOfDisk, InfraError, PolicyUnavailable:
		return true
	}
	return false
}

// IsTaskDefect reports whether the outcome blames the task.
func (o Outcome) IsTaskDefect() bool { return o != Scored && !o.IsInfra() }

// AfterAgent reports whether the outcome is a task defect that can arise
// only once the agent has acted: the verifier's run and its reward
// (timeouts, a missing, invalid or ambiguous reward, network use, the disk
// bound). An agent can cause every one of them from inside its sandbox (a
// replaced bash, a FIFO where test.sh reads, a filled disk), so when a
// policy is scored they must not exclude its attempt: the trainer scores
// them 0, never leaves them out of the baseline. The build and start
// defects come before the agent and say nothing about it.
func (o Outcome) AfterAgent() bool {
	switch o {
	case VerifierTimeout, RewardMissing, RewardInvalid, RewardAmbiguous, VerifierNeedsNetwork, StorageExceeded, SolveTimeout:
		return true
	}
	return false
}

// AgentKind is what an agent is to the task: its reference solution, the
// negative control, or a policy being measured or trained.
type AgentKind int

// Agent kinds.
const (
	KindPolicy    AgentKind = iota // an Actor other than the built-in ones (the agent harness)
	KindReference                  // the oracle: the task's own solution/solve.sh
	KindControl                    // the nop agent
)

// KindOf is the kind of an actor: only the built-in OracleActor is the
// reference and only NopActor the control, whatever another actor's name.
func KindOf(a Actor) AgentKind {
	switch a.(type) {
	case OracleActor, *OracleActor:
		return KindReference
	case NopActor, *NopActor:
		return KindControl
	}
	return KindPolicy
}

// String names the kind.
func (k AgentKind) String() string {
	switch k {
	case KindReference:
		return "reference"
	case KindControl:
		return "control"
	}
	return "policy"
}

// TimeoutIsDefect is the one rule for an agent that runs out of time
// (ActReport.TimedOut). The reference solution must finish within the
// agent timeout, so its timeout blames the task: a result the verifier
// scored becomes SolveTimeout, a task defect. Any other agent running out
// of time is that agent's failure: the verifier still runs, its reward
// stands (the reference recipe's passthrough) and the attempt is scored,
// never a task defect nor an infrastructure failure.
func (k AgentKind) TimeoutIsDefect() bool { return k == KindReference }

// applyTimeout applies the timeout rule to the verifier's result res of an
// agent of kind k that ran out of its limit of limitSec seconds.
func applyTimeout(res *Result, k AgentKind, limitSec float64) {
	switch {
	case k.TimeoutIsDefect() && res.Outcome == Scored:
		res.Outcome = SolveTimeout
		res.Detail = fmt.Sprintf("solve.sh exceeded the agent timeout (%gs); the verifier still ran", limitSec)
	case !k.TimeoutIsDefect():
		res.Warnings = append(res.Warnings, fmt.Sprintf("the agent hit its timeout (%gs); the verifier's reward stands", limitSec))
	}
}

// applyLimit is the one rule for a sandbox that exceeded a limit of its
// task (a *sandbox.LimitError, seen from outside the container): the
// reference solution or the control (whose verifier then wrote it) blames
// the task, StorageExceeded; any other agent failed the task, so the
// attempt is scored 0. Never an infrastructure failure, never retried.
func applyLimit(res *Result, k AgentKind, err error) {
	res.Detail, res.Log = err.Error(), ""
	res.VerifierExit = nil
	if k == KindPolicy {
		zero := 0.0
		res.Outcome, res.Reward = Scored, &zero
		return
	}
	res.Outcome, res.Reward = StorageExceeded, nil
}

// Scored reports whether the result counts: the verifier gave a reward
// that stands (for a Probe: the environment built and started). Scored
// results are the ones pass rates, baselines and verifier timings are
// taken over. Exactly one of Scored, TaskDefect and Infra holds.
func (r Result) Scored() bool { return r.Outcome == Scored }

// Passed reports whether the result is scored with a reward of at least 1
// (rewards are not capped at 1: a reward.json may say 2).
func (r Result) Passed() bool { return r.Scored() && r.Reward != nil && *r.Reward >= 1 }

// TaskDefect reports whether the result blames the task: the task is
// broken and its other results do not matter (SolveTimeout included: it
// is the reference solution's, see AgentKind.TimeoutIsDefect).
func (r Result) TaskDefect() bool { return r.Outcome.IsTaskDefect() }

// Infra reports whether the result is an infrastructure failure: it says
// nothing about the task or the agent and is left out of every rate.
func (r Result) Infra() bool { return r.Outcome.IsInfra() }
