package filters

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/similarity"
)

// Reasons of the near_dup stage.
const (
	ReasonDistinct      = "distinct"
	ReasonNearDuplicate = "near_duplicate"
)

// DefaultNearDupThreshold is near_dup's default Jaccard threshold on the
// instruction; the tests need half of it (see NearDup). Lightly edited
// copies (re-wrapped, renamed variables, changed numbers) measure 0.6–1.0
// on the instruction's 4-word shingles of normalised text; distinct
// variants of one family measure below 0.2 for 99% of pairs on real pools
// (5-gram), so 0.5 sits in the gap with room on both sides.
const DefaultNearDupThreshold = 0.5

// The near_dup sketch: 4-word shingles; 64 MinHash bins on the
// instruction, 63 of them banded 21×3 for LSH (a pair at Jaccard 0.5
// becomes a candidate with probability 0.94, at 0.6 0.99, at 0.7 0.9994;
// at 0.2 0.16, at 0.05 0.003), and 32 bins on the tests to screen
// candidates before the exact check: 192 bytes a task, so 100K tasks'
// signatures and band tables take about 35 MB.
const (
	nearDupShingle = 4
	sigInstr       = 64
	lshBands       = 21
	lshRows        = 3
	sigTests       = 32
	sigWidth       = sigInstr + sigTests
	// screenSlack: a candidate whose estimated similarity is this far
	// below the threshold is not checked exactly (the estimate's standard
	// error is at most 0.07 with 64 bins, 0.09 with 32).
	screenSlack = 0.25
	// maxBucketScan caps the earlier tasks examined per band for one task,
	// so a pool of thousands of templated instructions stays linear.
	maxBucketScan = 256
)

// NearDup drops tasks whose instruction and tests are both near-identical
// to an earlier kept task's, in pool order: exact Jaccard of the word
// shingle sets ≥ Threshold on the instruction and ≥ Threshold/2 on the
// tests. The tests' bar is lower because a renamed variable recurs all
// through test code (one renamed twice and a few numbers changed gave 0.46
// on a 20-line pytest file), while shared harnesses make even unrelated
// tests 0.2–0.7 alike: the tests only keep apart templated instructions
// over clearly different tests. It reads content during validate's pass (see
// ContentObserver): a MinHash signature per task stays in memory (192
// bytes) and the shingle sets go to an unlinked temporary file, read back
// only to verify LSH candidates, so LSH false positives never drop.
type NearDup struct {
	Threshold float64
	// SketchFile, when set, receives the sketches of the tasks near_dup
	// keeps (a sharded run: NearDupShards reads them in the merge).
	SketchFile string
	store      *sketchStore
}

// NewNearDup returns a near_dup stage; threshold 0 means the default.
func NewNearDup(threshold float64) (*NearDup, error) {
	if threshold == 0 {
		threshold = DefaultNearDupThreshold
	}
	if threshold <= 0 || threshold > 1 {
		return nil, fmt.Errorf("near_dup threshold %g: want 0 < t ≤ 1", threshold)
	}
	return &NearDup{Threshold: threshold, store: &sketchStore{idx: map[*pipeline.Task]int32{}}}, nil
}

// Name implements pipeline.Stage.
func (*NearDup) Name() string { return StageNearDup }

// ObserveContent implements ContentObserver.
func (n *NearDup) ObserveContent(t *pipeline.Task, b *bundle.Bundle) {
	instr := similarity.ShinglesOf(instructionWords(b), nearDupShingle)
	tests := similarity.ShinglesOf(testWords(b), nearDupShingle)
	sig := make([]uint16, 0, sigWidth)
	sig = append(sig, similarity.Sign(instr, sigInstr, 1)...)
	sig = append(sig, similarity.Sign(tests, sigTests, 2)...)
	n.store.add(t, sig, instr, tests)
}

// Decide implements pipeline.SetStage.
func (n *NearDup) Decide(ctx context.Context, tasks []*pipeline.Task) ([]pipeline.Outcome, error) {
	s := n.store
	defer s.release()
	if err := s.finish(); err != nil {
		return nil, fmt.Errorf("near_dup: %w", err)
	}
	outs := make([]pipeline.Outcome, len(tasks))
	ids := make([]int32, len(tasks)) // sketch of each task, -1 when none
	for i, t := range tasks {
		id, ok := s.idx[t]
		if !ok {
			id = -1
		}
		ids[i] = id
	}
	// LSH by sorting: per band, the (key, task) pairs sorted; the tasks
	// sharing a key with task j and coming before it in pool order are
	// the entries just before j's.
	// 32-bit keys: 8 bytes an entry (17 MB for 100K tasks); two band
	// values colliding on 32 bits only add a candidate the screen drops.
	type entry struct {
		key uint32
		i   int32
	}
	bands := make([][]entry, lshBands)
	for b := range bands {
		es := make([]entry, 0, len(tasks))
		for i, id := range ids {
			if id >= 0 && s.nI[id] > 0 {
				es = append(es, entry{uint32(similarity.BandKey(s.sig(id)[:sigInstr], b, lshRows)), int32(i)})
			}
		}
		slices.SortFunc(es, func(a, b entry) int {
			if a.key != b.key {
				if a.key < b.key {
					return -1
				}
				return 1
			}
			return int(a.i - b.i)
		})
		bands[b] = es
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	kept := make([]bool, len(tasks))
	seen := make([]int32, len(tasks)) // candidate stamp: j+1 when checked for task j
	var setA, setB, setC, setD []uint32
	for j := range tasks {
		if j%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		id := ids[j]
		if id < 0 {
			outs[j] = pipeline.ErrorOutcome("near_dup_no_sketch", "validate did not hand this task's content to near_dup")
			continue
		}
		match, ji, jt := -1, 0.0, 0.0
		sj := s.sig(id)
	bandLoop:
		for b := 0; b < lshBands && s.nI[id] > 0; b++ {
			es := bands[b]
			key := uint32(similarity.BandKey(sj[:sigInstr], b, lshRows))
			p, _ := slices.BinarySearchFunc(es, entry{key, int32(j)}, func(a, b entry) int {
				if a.key != b.key {
					if a.key < b.key {
						return -1
					}
					return 1
				}
				return int(a.i - b.i)
			})
			for q, scanned := p-1, 0; q >= 0 && es[q].key == key && scanned < maxBucketScan; q, scanned = q-1, scanned+1 {
				i := es[q].i
				if !kept[i] || seen[i] == int32(j)+1 {
					continue
				}
				seen[i] = int32(j) + 1
				si := s.sig(ids[i])
				if similarity.Estimate(si[:sigInstr], sj[:sigInstr]) < n.Threshold-screenSlack ||
					similarity.Estimate(si[sigInstr:], sj[sigInstr:]) < n.Threshold/2-screenSlack {
					continue
				}
				var err error
				if setA, setB, err = s.read(ids[i], setA, setB); err != nil {
					return nil, fmt.Errorf("near_dup: %w", err)
				}
				if setC, setD, err = s.read(id, setC, setD); err != nil {
					return nil, fmt.Errorf("near_dup: %w", err)
				}
				a, b := similarity.Jaccard(setA, setC), similarity.Jaccard(setB, setD)
				if a >= n.Threshold && b >= n.Threshold/2 {
					match, ji, jt = int(i), a, b
					break bandLoop
				}
			}
		}
		if match >= 0 {
			outs[j] = pipeline.DropOutcome(ReasonNearDuplicate, fmt.Sprintf(
				"near-duplicate of %s: Jaccard %.2f on the instruction, %.2f on the tests (%d-word shingles, thresholds %.2f and %.2f)",
				tasks[match].Path, ji, jt, nearDupShingle, n.Threshold, n.Threshold/2))
			continue
		}
		kept[j] = true
		outs[j] = pipeline.KeepOutcome(ReasonDistinct, "")
	}
	if n.SketchFile != "" {
		if err := n.writeSketches(n.SketchFile, tasks, ids, outs); err != nil {
			return nil, fmt.Errorf("near_dup: sketches for the merge: %w", err)
		}
	}
	return outs, nil
}

// sketchStore holds the signatures in memory and the shingle sets in an
// unlinked temporary file.
type sketchStore struct {
	mu      sync.Mutex
	idx     map[*pipeline.Task]int32
	sigs    []uint16 // sigWidth per sketch
	off     []int64  // spill offset of each sketch's sets
	nI, nT  []uint32 // set sizes
	spill   *os.File
	w       *bufio.Writer
	written int64
	err     error
	buf     []byte
}

func (s *sketchStore) add(t *pipeline.Task, sig []uint16, instr, tests []uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if s.spill == nil {
		f, err := os.CreateTemp("", "otcurate-near-dup-*")
		if err != nil {
			s.err = fmt.Errorf("shingle spill file: %w", err)
			return
		}
		_ = os.Remove(f.Name()) // unlinked: gone with the process
		s.spill, s.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	if _, dup := s.idx[t]; dup {
		return
	}
	s.idx[t] = int32(len(s.off))
	s.sigs = append(s.sigs, sig...)
	s.off = append(s.off, s.written)
	s.nI = append(s.nI, uint32(len(instr)))
	s.nT = append(s.nT, uint32(len(tests)))
	s.buf = s.buf[:0]
	for _, set := range [][]uint32{instr, tests} {
		for _, v := range set {
			s.buf = binary.LittleEndian.AppendUint32(s.buf, v)
		}
	}
	n, err := s.w.Write(s.buf)
	s.written += int64(n)
	if err != nil {
		s.err = fmt.Errorf("shingle spill file: %w", err)
	}
}

func (s *sketchStore) sig(id int32) similarity.Signature {
	return s.sigs[int(id)*sigWidth : int(id+1)*sigWidth]
}

// finish flushes the spill file before it is read.
func (s *sketchStore) finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && s.w != nil {
		if err := s.w.Flush(); err != nil {
			s.err = fmt.Errorf("shingle spill file: %w", err)
		}
	}
	return s.err
}

// read returns a sketch's instruction and tests sets, in the buffers given.
func (s *sketchStore) read(id int32, instr, tests []uint32) ([]uint32, []uint32, error) {
	n := int(s.nI[id] + s.nT[id])
	raw := make([]byte, 4*n)
	if _, err := s.spill.ReadAt(raw, s.off[id]); err != nil {
		return nil, nil, fmt.Errorf("shingle spill file: %w", err)
	}
	instr, tests = instr[:0], tests[:0]
	for k := 0; k < n; k++ {
		v := binary.LittleEndian.Uint32(raw[4*k:])
		if k < int(s.nI[id]) {
			instr = append(instr, v)
		} else {
			tests = append(tests, v)
		}
	}
	return instr, tests, nil
}

// release frees the signatures and closes the spill file.
func (s *sketchStore) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spill != nil {
		_ = s.spill.Close()
	}
	s.spill, s.w, s.sigs, s.off, s.nI, s.nT, s.idx = nil, nil, nil, nil, nil, nil, map[*pipeline.Task]int32{}
}
