package trial

// Outcome classifies a trial. Exactly one applies. The set is shared by
// every stage that runs tasks (env, flaky, difficulty) and by the trainer.
type Outcome string

// The scored outcome: the verifier produced a valid, finite reward.
const Scored Outcome = "scored"

// Task defects: the task, not the machine, is at fault.
const (
	BuildFailed          Outcome = "build_failed"
	BuildTimeout         Outcome = "build_timeout"
	BuildNeedsNetwork    Outcome = "build_needs_network" // failed offline: registry or package download
	EnvironmentUnhealthy Outcome = "environment_unhealthy"
	UnsupportedEnv       Outcome = "unsupported_environment"
	NoSolution           Outcome = "no_solution"
	SolveTimeout         Outcome = "solve_timeout"
	VerifierTimeout      Outcome = "verifier_timeout"
	RewardMissing        Outcome = "reward_missing"
	RewardInvalid        Outcome = "reward_invalid"
	RewardAmbiguous      Outcome = "reward_ambiguous"
	VerifierNeedsNetwork Outcome = "verifier_needs_network"
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
