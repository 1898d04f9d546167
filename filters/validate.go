package filters

import (
	"context"
	"fmt"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
)

// ReasonValid is the keep reason of the validate stage.
const ReasonValid = "valid"

// Reason codes validate decides from the row alone, before decoding.
const (
	ReasonDuplicatePath  = pool.ReasonDuplicatePath
	ReasonNullBlob       = "null_task_binary"
	ReasonUnreadableTask = "unreadable_task"
)

// Validate decodes each bundle safely, hashes it and checks it is a usable
// Harbor task. It fills the task's hashes for later stages.
type Validate struct {
	Limits bundle.Limits
	// StratifyBy names a task.toml [metadata] key (e.g. "category"); its
	// value becomes the task's stratum for a stratified select.
	StratifyBy string
	// OwnReadsOnly keeps in memory only the files validate itself and its
	// Observers read (the rest are hashed as they stream by): for when no
	// later stage of the pass sees the decoded bundle. Build sets it.
	OwnReadsOnly bool
	// Observers read each valid task's decoded bundle (near_dup's
	// sketches). Build sets them.
	Observers []ContentObserver
}

// validateReads are the members bundle.Validate reads the content of.
var validateReads = []string{"instruction.md", "task.toml"}

// observedReads are those and the files the content observers read.
func observedReads(name string) bool {
	return name == "instruction.md" || name == "task.toml" || strings.HasPrefix(name, "tests/")
}

// Name implements pipeline.Stage.
func (Validate) Name() string { return StageValidate }

// Process implements pipeline.ItemStage.
func (v Validate) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	keep := bundle.DefaultRetain()
	switch {
	case v.OwnReadsOnly && len(v.Observers) > 0:
		keep.Match = observedReads
	case v.OwnReadsOnly:
		keep.Only = validateReads
	}
	b, err := bundle.Scan(it.Record.Blob, v.Limits, keep)
	if err != nil {
		return defectOutcome(err)
	}
	it.Task.Hash = b.ContentHash
	it.Task.EnvHash = b.EnvHash
	info, err := bundle.Validate(b)
	if err != nil {
		return defectOutcome(err)
	}
	it.Bundle, it.Info = b, info
	if len(v.Observers) > 0 {
		c := &Content{Bundle: b}
		for _, o := range v.Observers {
			o.ObserveContent(it.Task, c)
		}
	}
	it.Task.EnvKind = info.EnvKind
	it.Task.HasSolution = info.HasSolution
	if v.StratifyBy != "" {
		it.Task.Stratum = "(none)"
		if val, ok := info.Config.Metadata[v.StratifyBy]; ok {
			it.Task.Stratum = fmt.Sprint(val)
		}
	}
	var notes []string
	if d := info.Config.Defaulted; len(d) > 0 {
		notes = append(notes, "defaulted: "+strings.Join(d, ", "))
	}
	notes = append(notes, info.Config.Notes...)
	notes = append(notes, info.Notes...)
	return pipeline.KeepOutcome(ReasonValid, strings.Join(notes, "; "))
}

// Admit implements pipeline.Intake: the row-level checks that need no
// decoding (the path, a path already used by an earlier row or nested
// under or holding one, an unreadable,
// null or empty blob).
func (Validate) Admit(rec pool.Record, seen *pool.PathSet) (pipeline.Outcome, bool) {
	if reason, detail := pool.PathProblem(rec); reason != "" {
		return pipeline.DropOutcome(reason, detail), true
	}
	if reason, detail := seen.Claim(rec); reason != "" {
		return pipeline.DropOutcome(reason, detail), true
	}
	switch {
	case rec.Err != nil:
		if d, ok := bundle.AsDefect(rec.Err); ok {
			return pipeline.DropOutcome(d.Reason, d.Detail), true
		}
		return pipeline.DropOutcome(ReasonUnreadableTask, rec.Err.Error()), true
	case rec.BlobNull:
		return pipeline.DropOutcome(ReasonNullBlob, rec.Origin()+": task_binary is null"), true
	case len(rec.Blob) == 0:
		return pipeline.DropOutcome(bundle.ReasonEmptyBlob, rec.Origin()+": task_binary is empty"), true
	}
	return pipeline.Outcome{}, false
}

// Reopen implements pipeline.Intake: it decodes a task's row again, for a
// pass after a set stage, and checks it is the bundle Process hashed.
func (Validate) Reopen(rec pool.Record, t *pipeline.Task, lim bundle.Limits) (*bundle.Bundle, *bundle.Info, error) {
	b, err := bundle.Scan(rec.Blob, lim, bundle.DefaultRetain())
	if err != nil {
		return nil, nil, err
	}
	info, err := bundle.Validate(b)
	if err != nil {
		return nil, nil, err
	}
	if b.ContentHash != t.Hash {
		return nil, nil, fmt.Errorf("content hash %s, validate saw %s", b.ContentHash, t.Hash)
	}
	return b, info, nil
}

func defectOutcome(err error) pipeline.Outcome {
	if d, ok := bundle.AsDefect(err); ok {
		return pipeline.DropOutcome(d.Reason, d.Detail)
	}
	// Not a task defect: the decoder itself failed. Say so, do not drop.
	return pipeline.ErrorOutcome("decode_error", fmt.Sprintf("unexpected decoder error: %v", err))
}
