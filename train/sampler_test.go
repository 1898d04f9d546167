package train

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSamplerWithoutSkipIsTheSeededEpochDraw: skipSolved 0 keeps the
// original draw, so earlier runs resume and reproduce unchanged.
func TestSamplerWithoutSkipIsTheSeededEpochDraw(t *testing.T) {
	s := newSampler(10, 3, 7, 0, 4)
	for step := 1; step <= 12; step++ {
		idx := s.next(step)
		if want := batch(10, 3, 7, step); !slices.Equal(idx, want) {
			t.Fatalf("step %d: %v, want %v", step, idx, want)
		}
		if err := s.observe(idx, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func allPass(idx []int, solved map[int]bool) []GroupMetrics {
	gs := make([]GroupMetrics, len(idx))
	for g, ti := range idx {
		gs[g] = GroupMetrics{Scored: 8}
		if solved[ti] {
			gs[g].Passed = 8
		}
	}
	return gs
}

// TestSamplerSkipsSolvedTasks: with skipSolved 1, a task whose group all
// passed is not drawn in the next epoch and is drawn again after it;
// other tasks keep their once-per-epoch draw.
func TestSamplerSkipsSolvedTasks(t *testing.T) {
	const n, b = 12, 4
	s := newSampler(n, b, 3, 1, 4)
	solved := map[int]bool{}
	drawn := map[int][]int{} // task → epochs drawn in
	for step := 1; step <= 15; step++ {
		p0 := s.pos
		idx := s.next(step)
		if len(idx) != b {
			t.Fatalf("step %d: batch of %d", step, len(idx))
		}
		// The epoch each task was drawn from: the walk's positions p0.. that
		// yielded idx, in order.
		var epochs []int
		for p, i := p0, 0; i < len(idx); p++ {
			e := p / n
			if rand.New(rand.NewPCG(3, uint64(e)+1)).Perm(n)[p%n] == idx[i] {
				epochs = append(epochs, e)
				drawn[idx[i]] = append(drawn[idx[i]], e)
				i++
			}
		}
		gs := allPass(idx, map[int]bool{idx[0]: epochs[0] == 0}) // the first task of each epoch-0 batch is solved
		if epochs[0] == 0 {
			solved[idx[0]] = true
		}
		if err := s.observe(idx, gs); err != nil {
			t.Fatal(err)
		}
	}
	for ti := 0; ti < n; ti++ {
		eps := drawn[ti]
		if solved[ti] {
			if slices.Contains(eps, 1) {
				t.Errorf("task %d solved in epoch 0 was drawn in epoch 1: %v", ti, eps)
			}
			if !slices.Contains(eps, 2) {
				t.Errorf("task %d did not come back in epoch 2: %v", ti, eps)
			}
		} else if !slices.Contains(eps, 1) {
			t.Errorf("unsolved task %d was not drawn in epoch 1: %v", ti, eps)
		}
	}
	if len(solved) != 3 {
		t.Fatalf("%d tasks solved in epoch 0, want 3", len(solved))
	}
}

// TestSamplerReturnsEveryoneWhenTooFewAreLeft: when fewer than B tasks
// are eligible, the tasks sitting out return instead of the batch
// shrinking; a group with too few scored attempts does not count as
// solved.
func TestSamplerReturnsEveryoneWhenTooFewAreLeft(t *testing.T) {
	s := newSampler(3, 2, 1, 5, 4)
	for step := 1; step <= 6; step++ {
		idx := s.next(step)
		if len(idx) != 2 {
			t.Fatalf("step %d: batch %v", step, idx)
		}
		gs := allPass(idx, map[int]bool{0: true, 1: true, 2: true})
		if err := s.observe(idx, gs); err != nil {
			t.Fatal(err)
		}
	}
	s = newSampler(4, 2, 1, 5, 4)
	idx := s.next(1)
	if err := s.observe(idx, []GroupMetrics{{Scored: 3, Passed: 3}, {Scored: 0}}); err != nil {
		t.Fatal(err)
	}
	if s.eligible(5) != 4 {
		t.Errorf("groups below the minimum sent tasks out: until %v", s.until)
	}
	if err := s.observe(idx, nil); err == nil {
		t.Error("observe accepted a step without groups")
	}
}
