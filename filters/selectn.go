package filters

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/otcurate/otcurate/pipeline"
)

// Reasons of the select stage.
const (
	ReasonSelected    = "selected"
	ReasonNotSelected = "not_selected"
	ReasonNoTarget    = "no_target"
)

// Select keeps exactly Target tasks (all when fewer survive, or when Target
// is 0). The choice is a pure function of the seed and the surviving set:
// each task's rank is a hash of (seed, content hash, path), so the same
// pool, config and seed always select the same tasks, and adding unrelated
// tasks to a pool moves only the tasks they outrank.
type Select struct {
	Target int
	Seed   int64
}

// Name implements pipeline.Stage.
func (Select) Name() string { return pipeline.StageSelect }

// Decide implements pipeline.SetStage.
func (s Select) Decide(ctx context.Context, tasks []*pipeline.Task) ([]pipeline.Outcome, error) {
	outs := make([]pipeline.Outcome, len(tasks))
	if s.Target <= 0 || len(tasks) <= s.Target {
		detail := fmt.Sprintf("%d survivors, target %d: all kept", len(tasks), s.Target)
		if s.Target <= 0 {
			detail = "no --target set: all survivors kept"
		}
		for i := range outs {
			outs[i] = pipeline.KeepOutcome(ReasonNoTarget, detail)
		}
		return outs, nil
	}
	order := make([]int, len(tasks))
	ranks := make([][32]byte, len(tasks))
	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(s.Seed))
	for i, t := range tasks {
		order[i] = i
		h := sha256.New()
		h.Write(seed[:])
		h.Write([]byte(t.Hash))
		h.Write([]byte{0})
		h.Write([]byte(t.Path))
		h.Sum(ranks[i][:0])
	}
	sort.Slice(order, func(a, b int) bool {
		ra, rb := ranks[order[a]], ranks[order[b]]
		if c := compare(ra[:], rb[:]); c != 0 {
			return c < 0
		}
		return tasks[order[a]].Path < tasks[order[b]].Path
	})
	for pos, i := range order {
		if pos < s.Target {
			outs[i] = pipeline.KeepOutcome(ReasonSelected, fmt.Sprintf("rank %d of %d (seed %d)", pos+1, len(tasks), s.Seed))
		} else {
			outs[i] = pipeline.DropOutcome(ReasonNotSelected, fmt.Sprintf("rank %d of %d, target %d (seed %d)", pos+1, len(tasks), s.Target, s.Seed))
		}
	}
	return outs, ctx.Err()
}

func compare(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
