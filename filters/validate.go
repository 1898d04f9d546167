package filters

import (
	"context"
	"fmt"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
)

// ReasonValid is the keep reason of the validate stage.
const ReasonValid = "valid"

// Validate decodes each bundle safely, hashes it and checks it is a usable
// Harbor task. It fills the task's hashes for later stages.
type Validate struct {
	Limits bundle.Limits
	// StratifyBy names a task.toml [metadata] key (e.g. "category"); its
	// value becomes the task's stratum for a stratified select.
	StratifyBy string
	// OwnReadsOnly keeps in memory only the files validate itself reads
	// (the rest are hashed as they stream by): for when no later stage of
	// the pass sees the decoded bundle. Build sets it.
	OwnReadsOnly bool
}

// validateReads are the members bundle.Validate reads the content of.
var validateReads = []string{"instruction.md", "task.toml"}

// Name implements pipeline.Stage.
func (Validate) Name() string { return pipeline.StageValidate }

// Process implements pipeline.ItemStage.
func (v Validate) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	keep := bundle.DefaultRetain()
	if v.OwnReadsOnly {
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

func defectOutcome(err error) pipeline.Outcome {
	if d, ok := bundle.AsDefect(err); ok {
		return pipeline.DropOutcome(d.Reason, d.Detail)
	}
	// Not a task defect: the decoder itself failed. Say so, do not drop.
	return pipeline.ErrorOutcome("decode_error", fmt.Sprintf("unexpected decoder error: %v", err))
}
