package filters

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/otcurate/otcurate/internal/radix"
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

// The pool's boilerplate: a shingle held by more than
// nearDupBoilerplateShare of the pool's tasks and by more than
// nearDupBoilerplateMin of them is the pool's template (an instruction
// preamble, a requirements list, a shared test.sh or conftest.py), not a
// task's content, and near_dup ignores it, for the instruction and for the
// tests separately. The share is decontam's (boilerplateShare): a 4-word
// phrase in one task of twenty is a template's, not one task's. The floor
// is higher than decontam's 5: a pool is what is being curated, and a
// phrase shared by up to 50 tasks is as likely one family's content (a
// topic's *_medium and *_hard variants) as a template; it also leaves
// pools of up to 1,000 tasks, where 5% is 50 or fewer, with no boilerplate
// but phrases in more than 50 of their tasks. A pool too small for that
// floor (62 tasks or fewer) still has a template: a phrase in more than
// nearDupSmallPoolShare of its tasks is one (20 templated tasks, a user's
// first try, lost all but one to near_dup when no phrase could be
// boilerplate below 51 tasks). Pools of fewer than nearDupMinPool tasks
// have none.
//
// Document frequencies are counted per section on an evenly spaced
// sample (pool order) of as many tasks as fit in maxCountShingles (4 MB,
// and as much again to sort), at least minBoilerplateSample and at most
// nearDupBoilerplateSample (every task of a smaller pool); a sample too
// big for one pass is counted in hash partitions. A shingle in 5% of the
// pool is in about 50 of 1,000 sampled tasks, give or take 7, and 250 of
// 5,000, give or take 16.
const (
	nearDupBoilerplateShare  = 0.05
	nearDupBoilerplateMin    = 50
	nearDupSmallPoolShare    = 0.8
	nearDupMinPool           = 10
	nearDupBoilerplateSample = 5000
	minBoilerplateSample     = 1000
	maxCountShingles         = 1 << 20
)

// NearDup drops tasks whose instruction and tests are both near-identical
// to an earlier kept task's, in pool order: exact Jaccard of the word
// shingle sets ≥ Threshold on the instruction and ≥ Threshold/2 on the
// tests. The tests' bar is lower because a renamed variable recurs all
// through test code (one renamed twice and a few numbers changed gave 0.46
// on a 20-line pytest file): the tests only keep apart near-identical
// instructions over clearly different tests.
//
// The sets exclude the pool's boilerplate (see nearDupBoilerplateShare):
// the shingles of a template every task shares would otherwise make
// distinct tasks of a templated pool 0.6–0.8 alike on both sections. A task whose
// instruction is nothing but the template has nothing of its own to
// compare and is never a near-duplicate (as a task without instruction
// text); when the tests of both tasks are nothing but the template (or
// hold no text), they do not tell the tasks apart and the instruction
// decides alone (two empty sets have Jaccard 1).
//
// It reads content during validate's pass (see ContentObserver): a MinHash
// signature per task stays in memory (192 bytes) and the shingle sets go
// to an unlinked temporary file, read back to count the boilerplate on a
// sample, to sign the sets without it (so LSH buckets hold what tasks do
// not share with the template) and to verify LSH candidates, so LSH false
// positives never drop.
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
func (n *NearDup) ObserveContent(t *pipeline.Task, c *Content) {
	instr := similarity.ShinglesOf(c.InstructionWords(), nearDupShingle)
	tests := similarity.ShinglesOf(c.TestWords(), nearDupShingle)
	n.store.add(t, instr, tests)
}

// sign appends the near_dup signature of two shingle sets to sig.
func sign(sig []uint16, instr, tests []uint32) []uint16 {
	sig = append(sig, similarity.Sign(instr, sigInstr, 1)...)
	return append(sig, similarity.Sign(tests, sigTests, 2)...)
}

// signInto writes the near_dup signature of two shingle sets into sig
// (sigWidth long).
func signInto(sig []uint16, instr, tests []uint32) {
	similarity.SignInto(sig[:sigInstr], instr, 1)
	similarity.SignInto(sig[sigInstr:sigWidth], tests, 2)
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
	var have []int32                 // the sketches of tasks, in pool order
	for i, t := range tasks {
		id, ok := s.idx[t]
		if !ok {
			id = -1
		} else {
			have = append(have, id)
		}
		ids[i] = id
	}
	// The pool's boilerplate, counted on the tasks to decide (not on
	// those an earlier stage dropped: dedup's copies would count twice).
	bpI, bpT, err := s.boilerplate(have)
	if err != nil {
		return nil, fmt.Errorf("near_dup: %w", err)
	}
	// Sign every set without the boilerplate, so that LSH buckets and the
	// screen see what the tasks do not share with the template.
	left, err := s.signAll(ctx, have, bpI, bpT)
	if err != nil {
		return nil, fmt.Errorf("near_dup: %w", err)
	}
	// hasInstr: the instruction has shingles besides the boilerplate.
	hasInstr := make([]bool, len(tasks))
	for i, id := range ids {
		hasInstr[i] = id >= 0 && left[id]
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bands, pos := s.lshBands(ids, hasInstr)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	kept := make([]bool, len(tasks))
	seen := make([]int32, len(tasks)) // candidate stamp: j+1 when checked for task j
	var setA, setB, setC, setD []uint32
	ignored := ""
	if len(bpI)+len(bpT) > 0 {
		ignored = fmt.Sprintf("; %d instruction and %d test shingles held by more than %.0f%% of the pool's tasks ignored",
			len(bpI), len(bpT), 100*nearDupBoilerplateShare)
	}
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
		readJ := false // setC, setD hold task j's sets
	bandLoop:
		for b := 0; b < lshBands && hasInstr[j]; b++ {
			es := bands[b]
			p := pos[b][j]
			key := es[p].key
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
				setA, setB = without(setA, bpI), without(setB, bpT)
				if !readJ {
					if setC, setD, err = s.read(id, setC, setD); err != nil {
						return nil, fmt.Errorf("near_dup: %w", err)
					}
					setC, setD, readJ = without(setC, bpI), without(setD, bpT), true
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
				"near-duplicate of %s: Jaccard %.2f on the instruction, %.2f on the tests (%d-word shingles, thresholds %.2f and %.2f%s)",
				tasks[match].Path, ji, jt, nearDupShingle, n.Threshold, n.Threshold/2, ignored))
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

// entry is a task's key in one LSH band. 32-bit keys: 8 bytes an entry
// (17 MB for 100K tasks); two band values colliding on 32 bits only add a
// candidate the screen drops.
type entry struct {
	key uint32
	i   int32
}

// lshBands returns, per band, the (key, task) entries of the tasks with
// instruction shingles (hasInstr), sorted by key then pool order, and
// where each task's entry is (pos[b][i], for a task with hasInstr). The
// bands are built on every core; the tasks sharing a key with task j and
// coming before it in pool order are the entries just before its own.
func (s *sketchStore) lshBands(ids []int32, hasInstr []bool) (bands [][]entry, pos [][]int32) {
	bands, pos = make([][]entry, lshBands), make([][]int32, lshBands)
	n := 0
	for _, h := range hasInstr {
		if h {
			n++
		}
	}
	onEveryCore(lshBands, func() []entry { return make([]entry, n) }, func(tmp []entry, b int) {
		es := make([]entry, 0, n)
		for i, id := range ids {
			if hasInstr[i] {
				es = append(es, entry{uint32(similarity.BandKey(s.sig(id)[:sigInstr], b, lshRows)), int32(i)})
			}
		}
		radixEntries(es, tmp)
		p := make([]int32, len(ids))
		for k, e := range es {
			p[e.i] = int32(k)
		}
		bands[b], pos[b] = es, p
	})
	return bands, pos
}

// onEveryCore calls work(state, i) for every i in [0, n), on as many
// goroutines as there are cores, each with a state of its own from
// newState (its scratch buffers).
func onEveryCore[S any](n int, newState func() S, work func(state S, i int)) {
	var next atomic.Int32
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			st := newState()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				work(st, i)
			}
		})
	}
	wg.Wait()
}

// radixEntries sorts es by key, stably, through tmp (at least as long):
// entries made in pool order come out ordered by key then pool order.
func radixEntries(es, tmp []entry) {
	radix.Stable(es, tmp, 32, func(e entry) uint64 { return uint64(e.key) })
}

// without removes from a sorted set the members of a sorted set bp, in
// place.
func without(set, bp []uint32) []uint32 {
	if len(bp) == 0 {
		return set
	}
	out, k := set[:0], 0
	for _, v := range set {
		for k < len(bp) && bp[k] < v {
			k++
		}
		if k == len(bp) || bp[k] != v {
			out = append(out, v)
		}
	}
	return out
}

// boilerplate returns the shingles, of the instruction and of the tests,
// that more than nearDupBoilerplateShare and more than
// nearDupBoilerplateMin of the sketches have, counted on an evenly spaced
// sample of have (pool order). No map of the pool's shingles is built: the
// sample's shingles of one section are appended to one slice, sorted, and
// counted by runs (each set is distinct, so a run's length is the number
// of tasks holding the shingle), in hash partitions of at most
// maxCountShingles.
func (s *sketchStore) boilerplate(have []int32) (instr, tests []uint32, err error) {
	n := len(have)
	if n < nearDupMinPool {
		return nil, nil, nil
	}
	// The count a shingle must exceed in the pool (besides its share).
	floor := min(nearDupBoilerplateMin, nearDupSmallPoolShare*float64(n))
	// Per section, as many tasks as one counting pass holds, within the
	// bounds, evenly spaced.
	var samples [2][]int32
	var sampled [2]int
	for sec := range samples {
		total := 0
		for _, id := range have {
			total += int(s.size(id, sec))
		}
		m := nearDupBoilerplateSample
		if total > 0 {
			m = min(m, max(minBoilerplateSample, int(int64(maxCountShingles)*int64(n)/int64(total))))
		}
		m = min(m, n)
		samples[sec] = make([]int32, m)
		for k := range samples[sec] {
			id := have[int(int64(k)*int64(n)/int64(m))]
			samples[sec][k] = id
			sampled[sec] += int(s.size(id, sec))
		}
	}
	// One partition and one task's whole section at most: the buffers do
	// not grow by doubling past the budget.
	size := min(max(sampled[0], sampled[1]), maxCountShingles) + 2*maxSectionWords
	buf, tmp := make([]uint32, 0, size), make([]uint32, 0, size)
	for sec, sample := range samples {
		m := len(sample)
		// A shingle held by c sample tasks stands for about c·n/m tasks.
		need := int(max(nearDupBoilerplateShare*float64(m), floor*float64(m)/float64(n)))
		parts := uint32(1 + sampled[sec]/maxCountShingles)
		var bp []uint32
		for p := uint32(0); p < parts; p++ {
			buf = buf[:0]
			for _, id := range sample {
				start := len(buf)
				if buf, err = s.readSection(id, sec, buf); err != nil {
					return nil, nil, err
				}
				if parts > 1 {
					kept := buf[:start]
					for _, v := range buf[start:] {
						if v%parts == p {
							kept = append(kept, v)
						}
					}
					buf = kept
				}
			}
			tmp = slices.Grow(tmp[:0], len(buf))[:len(buf)]
			radix.Uint32(buf, tmp)
			for i := 0; i < len(buf); {
				j := i + 1
				for j < len(buf) && buf[j] == buf[i] {
					j++
				}
				if j-i > need {
					bp = append(bp, buf[i])
				}
				i = j
			}
		}
		slices.Sort(bp)
		if sec == 0 {
			instr = bp
		} else {
			tests = bp
		}
	}
	return instr, tests, nil
}

// signAll signs the sets of have without the boilerplate (all of the sets
// when there is none) into the store's signatures, and reports which
// instructions keep a shingle (indexed by sketch). The spill file is read
// once, in order, a chunk at a time; each chunk's sets are signed on every
// core (signing 100K tasks' sets took two seconds on one).
func (s *sketchStore) signAll(ctx context.Context, have []int32, bpI, bpT []uint32) ([]bool, error) {
	order := slices.Clone(have)
	slices.Sort(order) // sketches are spilled in id order
	left := make([]bool, len(s.off))
	s.sigs = make([]uint16, len(s.off)*sigWidth)
	r := bufio.NewReaderSize(io.NewSectionReader(s.spill, 0, s.written), 1<<20)
	pos := int64(0)
	var chunk []byte
	var starts []int // offset of each of the chunk's sketches in chunk
	for len(order) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Read sketches until the chunk holds signChunk bytes.
		chunk, starts = chunk[:0], starts[:0]
		k := 0
		for ; k < len(order) && (k == 0 || len(chunk) < signChunk); k++ {
			id := order[k]
			if _, err := r.Discard(int(s.off[id] - pos)); err != nil {
				return nil, fmt.Errorf("shingle spill file: %w", err)
			}
			size := 4 * int(s.nI[id]+s.nT[id])
			starts = append(starts, len(chunk))
			chunk = slices.Grow(chunk, size)[:len(chunk)+size]
			if _, err := io.ReadFull(r, chunk[len(chunk)-size:]); err != nil {
				return nil, fmt.Errorf("shingle spill file: %w", err)
			}
			pos = s.off[id] + int64(size)
		}
		ids := order[:k]
		order = order[k:]
		onEveryCore(len(ids), func() *[2][]uint32 { return new([2][]uint32) }, func(sets *[2][]uint32, x int) {
			id := ids[x]
			raw := chunk[starts[x]:][:4*int(s.nI[id]+s.nT[id])]
			nI := 4 * int(s.nI[id])
			instr, tests := decodeSet(sets[0][:0], raw[:nI]), decodeSet(sets[1][:0], raw[nI:])
			sets[0], sets[1] = instr, tests // keep the grown buffers
			instr, tests = without(instr, bpI), without(tests, bpT)
			left[id] = len(instr) > 0
			signInto(s.sig(id), instr, tests)
		})
	}
	return left, nil
}

// signChunk is how many bytes of sets signAll reads before signing them.
const signChunk = 4 << 20

func decodeSet(dst []uint32, raw []byte) []uint32 {
	for k := 0; k+4 <= len(raw); k += 4 {
		dst = append(dst, binary.LittleEndian.Uint32(raw[k:]))
	}
	return dst
}

// sketchStore holds the signatures in memory and the shingle sets in an
// unlinked temporary file.
type sketchStore struct {
	mu      sync.Mutex
	idx     map[*pipeline.Task]int32
	sigs    []uint16 // sigWidth per sketch, made by signAll
	off     []int64  // spill offset of each sketch's sets
	nI, nT  []uint32 // set sizes
	spill   *os.File
	w       *bufio.Writer
	written int64
	err     error
	buf     []byte
	scratch []byte // read and readSection's (Decide's goroutine only)
}

func (s *sketchStore) add(t *pipeline.Task, instr, tests []uint32) {
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

// read returns a sketch's instruction and tests sets, in the buffers given
// (not safe for concurrent use: it reads through the store's scratch
// buffer).
func (s *sketchStore) read(id int32, instr, tests []uint32) ([]uint32, []uint32, error) {
	raw, err := s.readRaw(s.off[id], 4*int(s.nI[id]+s.nT[id]))
	if err != nil {
		return nil, nil, err
	}
	nI := 4 * int(s.nI[id])
	return decodeSet(instr[:0], raw[:nI]), decodeSet(tests[:0], raw[nI:]), nil
}

// size is the size of a sketch's instruction (sec 0) or tests (1) set.
func (s *sketchStore) size(id int32, sec int) uint32 {
	if sec == 0 {
		return s.nI[id]
	}
	return s.nT[id]
}

// readSection appends a sketch's instruction (sec 0) or tests (1) set to
// dst (as read, through the scratch buffer).
func (s *sketchStore) readSection(id int32, sec int, dst []uint32) ([]uint32, error) {
	off := s.off[id]
	if sec == 1 {
		off += 4 * int64(s.nI[id])
	}
	raw, err := s.readRaw(off, 4*int(s.size(id, sec)))
	if err != nil {
		return dst, err
	}
	return decodeSet(dst, raw), nil
}

// readRaw reads n bytes of the spill file at off into the scratch buffer.
func (s *sketchStore) readRaw(off int64, n int) ([]byte, error) {
	s.scratch = slices.Grow(s.scratch[:0], n)[:n]
	if _, err := s.spill.ReadAt(s.scratch, off); err != nil {
		return nil, fmt.Errorf("shingle spill file: %w", err)
	}
	return s.scratch, nil
}

// release frees the signatures and closes the spill file.
func (s *sketchStore) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spill != nil {
		_ = s.spill.Close()
	}
	s.spill, s.w, s.sigs, s.off, s.nI, s.nT, s.idx = nil, nil, nil, nil, nil, nil, map[*pipeline.Task]int32{}
	s.scratch = nil
}
