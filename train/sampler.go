package train

import (
	"fmt"
	"math/rand/v2"
)

// sampler draws each step's tasks: seeded epochs without replacement (a
// fresh permutation of the task set per epoch, walked in order). With
// skipSolved > 0 a task whose whole group passed sits out the next
// skipSolved epochs: another group of it would most likely have zero
// variance, an advantage of 0 for every attempt, and teach nothing, so
// those rollouts go to tasks the policy does not yet always solve. When
// fewer than B tasks are eligible, every task sitting out returns rather
// than the batch shrinking.
//
// The sampler's state is a function of the seed and of the groups of the
// steps so far (metrics.jsonl), so a resumed run replays it exactly.
type sampler struct {
	n, b       int
	seed       int64
	skipSolved int
	minGroup   int

	pos       int   // position in the endless walk over epoch permutations
	perm      []int // the permutation of epoch permEpoch
	permEpoch int
	until     []int // a task is eligible from this epoch on
}

func newSampler(n, b int, seed int64, skipSolved, minGroup int) *sampler {
	return &sampler{n: n, b: b, seed: seed, skipSolved: skipSolved, minGroup: minGroup, permEpoch: -1, until: make([]int, n)}
}

// next returns the task indices of step (1-based). Without skipSolved it
// is batch(n, b, seed, step), the trainer's original draw.
func (s *sampler) next(step int) []int {
	if s.skipSolved <= 0 {
		return batch(s.n, s.b, s.seed, step)
	}
	want := min(s.b, s.n)
	if s.eligible(s.pos/s.n) < want {
		clear(s.until)
	}
	out := make([]int, 0, want)
	for len(out) < want {
		epoch, off := s.pos/s.n, s.pos%s.n
		if epoch != s.permEpoch {
			s.perm = rand.New(rand.NewPCG(uint64(s.seed), uint64(epoch)+1)).Perm(s.n)
			s.permEpoch = epoch
			if s.eligible(epoch) < want-len(out) {
				clear(s.until)
			}
		}
		s.pos++
		if t := s.perm[off]; s.until[t] <= epoch {
			out = append(out, t)
		}
	}
	return out
}

func (s *sampler) eligible(epoch int) int {
	n := 0
	for _, u := range s.until {
		if u <= epoch {
			n++
		}
	}
	return n
}

// observe records a step's groups (in the order of the indices next
// returned): a group whose every scored attempt passed, with at least
// minGroup scored, sends its task out for skipSolved epochs.
func (s *sampler) observe(idx []int, groups []GroupMetrics) error {
	if s.skipSolved <= 0 {
		return nil
	}
	if len(groups) != len(idx) {
		return fmt.Errorf("train: %d groups for %d tasks (a run without group metrics cannot resume with --skip-solved)", len(groups), len(idx))
	}
	epoch := (s.pos - 1) / s.n // the epoch of the batch's last draw
	for g, t := range idx {
		if gm := groups[g]; gm.Scored >= s.minGroup && gm.Scored > 0 && gm.Passed == gm.Scored {
			s.until[t] = epoch + 1 + s.skipSolved
		}
	}
	return nil
}
