package pipeline

import (
	"context"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
)

// The run-directory records, under the names stages use.
type (
	// Verdict is the outcome class of a decision.
	Verdict = rundir.Verdict
	// Decision is one line of decisions.jsonl.
	Decision = rundir.Decision
	// Evidence is the work behind a sandbox stage's verdict.
	Evidence = rundir.Evidence
	// Task is the per-task metadata kept for the whole run.
	Task = rundir.Task
	// StageMark is one stage's decision on a task.
	StageMark = rundir.StageMark
	// MarkMeasure is what a stage measured of a task, beside its verdict.
	MarkMeasure = rundir.MarkMeasure
	// StageSummary is one stage's line of the funnel.
	StageSummary = rundir.StageSummary
	// Summary is summary.json: the funnel of one run.
	Summary = rundir.Summary
	// Shard is a deterministic slice of a pool.
	Shard = rundir.Shard
)

// Verdicts (see rundir).
const (
	Keep  = rundir.Keep
	Drop  = rundir.Drop
	Error = rundir.Error
)

// Outcome is what a stage says about one task.
type Outcome struct {
	Verdict Verdict
	Reason  string
	Detail  string
	Flags   []string
	// ScoreSeconds and ScoreRate are the stage's measurement when it has
	// one: a duration (flaky's median verifier seconds) or a rate
	// (difficulty's pass rate). A stage sets at most one, the kind its
	// Format names; both are `score` on disk.
	ScoreSeconds, ScoreRate *float64
	// Evidence is set by stages that run sandboxes.
	Evidence *Evidence
	// Proof is where the verifier gate's positive evidence came from
	// (filters.ProofOracle, ...); other stages leave it empty.
	Proof string
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

// Item is a task in flight through item stages, with its bytes.
type Item struct {
	Task   *Task
	Record pool.Record
	Bundle *bundle.Bundle // decoded by the intake stage, available to later stages of the segment
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

// Intake is the item stage that turns pool rows into tasks: the first
// stage of every run (validate). Process sets the task's content hash,
// which places it in a shard and identifies it in the ledger.
type Intake interface {
	ItemStage
	// Admit decides, in pool order and before any decoding, the rows that
	// are not tasks at all; seen maps the paths used so far to their rows
	// (Admit records rec's). It reports false for a row Process must see.
	Admit(rec pool.Record, seen *pool.PathSet) (Outcome, bool)
	// Reopen decodes a task's row again for a pass after a set stage,
	// with the engine's limits, and fails if it is no longer the bundle
	// Process saw.
	Reopen(rec pool.Record, t *Task, lim bundle.Limits) (*bundle.Bundle, *bundle.Info, error)
}

// Formatted is implemented by stages that write more than a verdict in
// the run directory: a score, evidence columns.
type Formatted interface {
	Format() rundir.StageFormat
}

// LayoutOf is the run-directory layout of stages (see Formatted).
func LayoutOf(stages []Stage) rundir.Layout {
	l := rundir.Layout{}
	for _, s := range stages {
		if f, ok := s.(Formatted); ok {
			l[s.Name()] = f.Format()
		}
	}
	return l
}

// Stage is an ItemStage or a SetStage.
type Stage interface {
	Name() string
}
