package filters

import (
	"context"

	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/trial"
)

// Proof kinds: where the verifier gate's positive evidence (a state the
// verifier scores 1) came from. Recorded per task in the manifest.
const (
	ProofOracle   = "oracle"   // the bundle's own solution/solve.sh
	ProofSupplied = "supplied" // a solution beside the pool (solution_binary column, --solutions, a discovered one)
	ProofPolicy   = "policy"   // a policy attempt passed and its replay reproduced the reward
	ProofNone     = "none"     // no positive evidence: only the negative side was checked
)

// Prover finds positive evidence for a task that has no oracle, by letting
// a policy attempt it. The flaky stage calls it after the negative side
// passed and only when neither the bundle nor the user supplied a
// solution.
type Prover interface {
	// Prove attempts t. It returns what it found and every run it paid
	// for; an error means the run was interrupted (context cancelled),
	// never a verdict.
	Prove(ctx context.Context, it *pipeline.Item, t *trial.Task) (PolicyProof, error)
	// Fingerprint identifies the settings that change Prove's verdict
	// (policy identity, attempts, re-verifications, replays); it becomes
	// part of the flaky stage's ledger fingerprint.
	Fingerprint() string
}

// PolicyProof is what a Prover found for one task.
type PolicyProof struct {
	// Solved: an attempt scored 1, the verifier agreed with itself on
	// that state, and a replay in a fresh sandbox reproduced the reward.
	Solved bool
	// Verdict, when not the zero Outcome, decides the task: a drop such
	// as flaky_verifier or flaky_solution_or_environment, a task defect
	// seen during an attempt, or an error outcome when too many attempts
	// were lost to infrastructure.
	Verdict pipeline.Outcome
	// Runs holds every trial result paid for (attempts, re-verifications,
	// replays), for the stage's spend accounting and decisions.
	Runs []trial.Result
	// Attempts, Scored and Passes describe the policy attempts alone
	// (not re-verifications or replays), so the difficulty stage can
	// reuse them instead of paying again.
	Attempts, Scored, Passes int
	// Solution is the directory of the discovered solution written for
	// this task (RUN_DIR/solutions/<task hash>/), empty when none.
	Solution string
	// Detail is a one-line human account ("attempt 3 of 8 passed; 2
	// re-verifications agreed; replay reproduced 1").
	Detail string
}
