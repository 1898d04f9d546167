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
	// Stratified keeps each stratum's share of the survivors (the task's
	// Stratum, set by validate from a [metadata] key).
	Stratified bool
}

// Name implements pipeline.Stage.
func (Select) Name() string { return StageSelect }

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
	if s.Stratified {
		return s.stratified(tasks, order), ctx.Err()
	}
	for pos, i := range order {
		if pos < s.Target {
			outs[i] = pipeline.KeepOutcome(ReasonSelected, fmt.Sprintf("rank %d of %d (seed %d)", pos+1, len(tasks), s.Seed))
		} else {
			outs[i] = pipeline.DropOutcome(ReasonNotSelected, fmt.Sprintf("rank %d of %d, target %d (seed %d)", pos+1, len(tasks), s.Target, s.Seed))
		}
	}
	return outs, ctx.Err()
}

// stratified gives each stratum a share of Target proportional to its
// size (largest remainders, ties to the larger stratum then by name) and
// fills it by rank; seats a stratum cannot fill go to the best-ranked
// remaining tasks of any stratum.
func (s Select) stratified(tasks []*pipeline.Task, order []int) []pipeline.Outcome {
	size := map[string]int{}
	for _, t := range tasks {
		size[t.Stratum]++
	}
	names := make([]string, 0, len(size))
	for k := range size {
		names = append(names, k)
	}
	quota := map[string]int{}
	type rem struct {
		name string
		frac float64
	}
	var rems []rem
	given := 0
	for _, k := range names {
		exact := float64(s.Target) * float64(size[k]) / float64(len(tasks))
		quota[k] = int(exact)
		given += quota[k]
		rems = append(rems, rem{k, exact - float64(quota[k])})
	}
	sort.Slice(rems, func(a, b int) bool {
		if rems[a].frac != rems[b].frac {
			return rems[a].frac > rems[b].frac
		}
		if size[rems[a].name] != size[rems[b].name] {
			return size[rems[a].name] > size[rems[b].name]
		}
		return rems[a].name < rems[b].name
	})
	for i := 0; given < s.Target && i < len(rems); i++ {
		quota[rems[i].name]++
		given++
	}
	outs := make([]pipeline.Outcome, len(tasks))
	chosen := make([]bool, len(tasks))
	taken := map[string]int{}
	n := 0
	for _, i := range order {
		st := tasks[i].Stratum
		if taken[st] < quota[st] {
			taken[st]++
			chosen[i] = true
			n++
		}
	}
	for _, i := range order { // seats left by small strata
		if n >= s.Target {
			break
		}
		if !chosen[i] {
			chosen[i] = true
			n++
		}
	}
	for pos, i := range order {
		st := tasks[i].Stratum
		if chosen[i] {
			outs[i] = pipeline.KeepOutcome(ReasonSelected, fmt.Sprintf("stratum %q: %d of %d survivors, quota %d of %d; rank %d (seed %d)", st, taken[st], size[st], quota[st], s.Target, pos+1, s.Seed))
		} else {
			outs[i] = pipeline.DropOutcome(ReasonNotSelected, fmt.Sprintf("stratum %q quota %d filled by better ranks; rank %d (seed %d)", st, quota[st], pos+1, s.Seed))
		}
	}
	return outs
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
