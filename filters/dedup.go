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
func (Dedup) Name() string { return StageDedup }

// Decide implements pipeline.SetStage.
func (Dedup) Decide(ctx context.Context, tasks []*pipeline.Task) ([]pipeline.Outcome, error) {
	type group struct {
		first *pipeline.Task // the lexicographically first path
		count int
	}
	groups := make(map[string]*group, len(tasks))
	all := make([]group, 0, len(tasks)) // one allocation for every group
	for _, t := range tasks {
		g := groups[t.Hash]
		if g == nil {
			all = append(all, group{first: t})
			g = &all[len(all)-1]
			groups[t.Hash] = g
		}
		g.count++
		if t.Path < g.first.Path {
			g.first = t
		}
	}
	outs := make([]pipeline.Outcome, len(tasks))
	for i, t := range tasks {
		g := groups[t.Hash]
		keeper := g.first
		switch {
		case keeper == t && g.count > 1:
			outs[i] = pipeline.KeepOutcome(ReasonUnique, fmt.Sprintf("kept of %d identical tasks (first path)", g.count))
		case keeper == t:
			outs[i] = pipeline.KeepOutcome(ReasonUnique, "")
		default:
			outs[i] = pipeline.DropOutcome(ReasonDuplicateContent, fmt.Sprintf("same content as %s (hash %.12s)", keeper.Path, t.Hash))
		}
	}
	return outs, ctx.Err()
}
