package pipeline

import (
	"context"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
)

// Stage names, in their default order. They are part of the run-output
// contract.
const (
	StageValidate = "validate"
	StageDedup    = "dedup"
	StageLint     = "lint"
	StageEnv      = "env"
	StageFlaky    = "flaky"
	// StageVerifierTime follows flaky: verifiers slow relative to the pool.
	StageVerifierTime = "verifier_time"
	StageDifficulty   = "difficulty"
	StageSelect       = "select"
)

// Verdict is the outcome class of a decision.
type Verdict string

// Verdicts. Error means the stage could not decide (an infrastructure
// problem, never a task defect); the task is not kept.
const (
	Keep  Verdict = "keep"
	Drop  Verdict = "drop"
	Error Verdict = "error"
)

// Decision is one line of decisions.jsonl.
type Decision struct {
	Index   int64   `json:"index"`
	Path    string  `json:"path"`
	Stage   string  `json:"stage"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	Detail  string  `json:"detail,omitempty"`
	Hash    string  `json:"hash,omitempty"`
	// Flags are findings that did not decide the verdict on their own
	// (e.g. lint checks set to warn), as reason codes.
	Flags []string `json:"flags,omitempty"`
	// Score is the stage's measurement (the difficulty stage's pass rate,
	// the flaky stage's median verifier seconds).
	Score *float64 `json:"score,omitempty"`
	// Evidence is what a sandbox stage spent and saw for the task.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Evidence is the work behind a sandbox stage's verdict on one task: the
// runs it spent and what they scored, the sandbox time they took, and the
// log excerpt that explains a drop. It makes every verdict and every cost
// figure in a report traceable to runs.
type Evidence struct {
	Runs           int     `json:"runs"`            // verifier runs (or agent attempts) spent
	Passes         int     `json:"passes"`          // runs that scored 1
	Sandboxes      int     `json:"sandboxes"`       // containers started
	SandboxSeconds float64 `json:"sandbox_seconds"` // build + start + solve + verify + teardown, summed over sandboxes
	BuildSeconds   float64 `json:"build_seconds,omitempty"`
	StartSeconds   float64 `json:"start_seconds,omitempty"`
	Teardown       float64 `json:"teardown_seconds,omitempty"`
	// VerifierSeconds is the median test.sh time of the runs.
	VerifierSeconds float64 `json:"verifier_seconds,omitempty"`
	// FromLedger is set when the outcome was served from the ledger: the
	// figures are those of the run that decided it, and cost nothing now.
	FromLedger bool `json:"from_ledger,omitempty"`
	// Log is the tail of the log behind a drop (build log, test.sh output).
	Log string `json:"log,omitempty"`
}

// Outcome is what a stage says about one task.
type Outcome struct {
	Verdict Verdict
	Reason  string
	Detail  string
	Flags   []string
	// Score is the stage's measurement when it has one (the difficulty
	// stage's pass rate), kept in the ledger and the manifest.
	Score *float64
	// Evidence is set by stages that run sandboxes.
	Evidence *Evidence
}

// KeepOutcome, DropOutcome and ErrorOutcome build outcomes.
func KeepOutcome(reason, detail string) Outcome {
	return Outcome{Verdict: Keep, Reason: reason, Detail: detail}
}

// DropOutcome is a drop for a task defect.
func DropOutcome(reason, detail string) Outcome {
	return Outcome{Verdict: Drop, Reason: reason, Detail: detail}
}

// ErrorOutcome is an undecided task (infrastructure failure).
func ErrorOutcome(reason, detail string) Outcome {
	return Outcome{Verdict: Error, Reason: reason, Detail: detail}
}

// Task is the per-task metadata kept for the whole run. It must stay small:
// one exists per input row.
type Task struct {
	Index       int64
	Path        string
	Hash        string // bundle content hash (set by validate)
	EnvHash     string // content hash of environment/
	BlobBytes   int64
	EnvKind     string
	HasSolution bool
	Stratum     string // the task's value of the select stage's stratification key
	Alive       bool   // not dropped by any stage so far
	LastStage   string // stage that last decided the task
	Marks       []StageMark
	outOfShard  bool   // validate placed it outside the run's shard
	blob        []byte // the bundle, held for the output when small (see Engine.RetainBlobs)
}

// StageMark is one stage's decision on a task, kept for the manifest.
// Reason codes come from a small set of constants, so marks cost a few
// dozen bytes per task and stage.
type StageMark struct {
	Stage   string
	Verdict Verdict
	Reason  string
	Seconds float64 // time the stage spent on this task (0 for set stages)
	Score   *float64
	// Runs, Passes and SandboxSeconds summarise the stage's Evidence (the
	// log excerpt stays in decisions.jsonl).
	Runs, Passes   int32
	SandboxSeconds float64
	FromLedger     bool
}

// Item is a task in flight through item stages, with its bytes.
type Item struct {
	Task   *Task
	Record pool.Record
	Bundle *bundle.Bundle // decoded by validate, available to later stages of the segment
	Info   *bundle.Info
}

// ItemStage decides tasks one at a time. Process must be safe for
// concurrent use and should honour ctx.
type ItemStage interface {
	Name() string
	Process(ctx context.Context, it *Item) Outcome
}

// SetStage decides over all surviving tasks at once. It returns one
// outcome per task, aligned with tasks (which are in pool order).
type SetStage interface {
	Name() string
	Decide(ctx context.Context, tasks []*Task) ([]Outcome, error)
}

// Stage is an ItemStage or a SetStage.
type Stage interface {
	Name() string
}
