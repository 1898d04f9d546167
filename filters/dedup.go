package filters

import (
	"context"
	"fmt"

	"github.com/otcurate/otcurate/pipeline"
)

// Reasons of the dedup stage.
const (
	ReasonUnique           = "unique"
	ReasonDuplicateContent = "duplicate_content"
)

// Dedup drops tasks whose content hash equals another's. Of each set of
// identical tasks, the one with the lexicographically first path is kept,
// so the result does not depend on pool order.
type Dedup struct{}

// Name implements pipeline.Stage.
func (Dedup) Name() string { return pipeline.StageDedup }

// Decide implements pipeline.SetStage.
func (Dedup) Decide(ctx context.Context, tasks []*pipeline.Task) ([]pipeline.Outcome, error) {
	first := make(map[string]*pipeline.Task, len(tasks))
	count := make(map[string]int, len(tasks))
	for _, t := range tasks {
		count[t.Hash]++
		if cur, ok := first[t.Hash]; !ok || t.Path < cur.Path {
			first[t.Hash] = t
		}
	}
	outs := make([]pipeline.Outcome, len(tasks))
	for i, t := range tasks {
		keeper := first[t.Hash]
		switch {
		case keeper == t && count[t.Hash] > 1:
			outs[i] = pipeline.KeepOutcome(ReasonUnique, fmt.Sprintf("kept of %d identical tasks (first path)", count[t.Hash]))
		case keeper == t:
			outs[i] = pipeline.KeepOutcome(ReasonUnique, "")
		default:
			outs[i] = pipeline.DropOutcome(ReasonDuplicateContent, fmt.Sprintf("same content as %s (hash %.12s)", keeper.Path, t.Hash))
		}
	}
	return outs, ctx.Err()
}
