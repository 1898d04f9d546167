package filters

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/internal/radix"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/similarity"
	"github.com/sourcegraph/conc/stream"
)

// Reasons of the decontam stage.
const (
	ReasonClean        = "clean"
	ReasonContaminated = "contaminated"
)

// Decontam defaults: the reference pipeline's 8-gram overlap and fuzzy
// ratio ≥ 0.8 against held-out benchmark sets.
const (
	DefaultDecontamN     = 8
	DefaultDecontamRatio = 0.8
)

const (
	// fuzzyGram is the shingle that picks the benchmark tasks worth an
	// Indel ratio: at ratio ≥ 0.8 with evenly spread edits, runs of four
	// words survive.
	fuzzyGram = 4
	// fuzzyCandidates is how many benchmark tasks (most shared 4-grams
	// first) get the exact ratio.
	fuzzyCandidates = 3
	// commonGram: a 4-gram in more benchmark tasks than this is boilerplate
	// and picks no candidate.
	commonGram = 64
	// maxSpanWords caps the overlapping span quoted as evidence.
	maxSpanWords = 40
	// boilerplateShare and boilerplateMin: an n-gram held by more than
	// this share (and this count) of the benchmark's tasks is its
	// boilerplate (a prompt template such as SWE-bench's "I've uploaded a
	// python code repository..."), which a training pool of the same
	// source shares without holding any benchmark task.
	boilerplateShare = 0.05
	boilerplateMin   = 5
)

// DecontamOptions configure the decontam stage.
type DecontamOptions struct {
	// Against are the benchmark pools: parquet files (same format as a
	// pool) or folders of task directories.
	Against []string
	// N is the n-gram size of the overlap check, in normalised words (0 =
	// DefaultDecontamN).
	N int
	// Ratio is the fuzzy-match threshold on the instruction (0 =
	// DefaultDecontamRatio).
	Ratio float64
	// Limits decode the benchmark bundles.
	Limits bundle.Limits
}

// Decontam drops tasks whose instruction overlaps a benchmark task's: a
// shared n-gram of normalised words (see similarity.Words) that is not the
// benchmark's boilerplate (held by more than 5% of its tasks, and more
// than 5), or an Indel ratio (fuzz.ratio's measure, on normalised words)
// ≥ Ratio. The evidence
// names the benchmark task and quotes the overlapping span.
type Decontam struct {
	N     int
	Ratio float64
	bench []benchTask
	// grams: the benchmark's n-grams that are not its boilerplate, sorted
	// by hash, each with the first benchmark task holding it. fuzzy: the
	// (4-gram, benchmark task) pairs, sorted, without the 4-grams of more
	// than commonGram tasks. Sorted tables, not maps: a 500-task
	// benchmark's maps took a tenth of a second to build, one small
	// allocation per 4-gram, and as long again in garbage collection.
	grams []gramRow
	fuzzy []postRow
	// seen holds ObserveContent's verdicts until Process reports them: nil
	// for a clean task.
	mu   sync.Mutex
	seen map[*pipeline.Task]*pipeline.Outcome
	// gramBits and fuzzyBits: one bit per hash bucket of the tables'
	// keys, a 512 KB filter that stays in cache: most of a clean task's
	// n-grams are turned away without a search of the table (cache misses
	// each).
	gramBits, fuzzyBits bitFilter
}

// bitFilter is a one-hash Bloom filter of 2^22 bits.
type bitFilter []uint64

func newBitFilter() bitFilter { return make(bitFilter, 1<<22/64) }

func (f bitFilter) add(h uint64)      { b := h >> 42; f[b/64] |= 1 << (b % 64) }
func (f bitFilter) has(h uint64) bool { b := h >> 42; return f[b/64]&(1<<(b%64)) != 0 }

// gramRow is a benchmark n-gram and the first benchmark task holding it.
type gramRow struct {
	g     uint64
	first int32
}

// postRow is a benchmark n-gram and one benchmark task holding it.
type postRow struct {
	g  uint64
	id int32
}

type benchTask struct {
	name   string // pool: path
	hashes []uint64
}

// NewDecontam loads the benchmark pools. A pool that cannot be opened or
// read, or a benchmark row that is not a readable task, is an error: a
// silently partial benchmark would pass contaminated tasks.
func NewDecontam(o DecontamOptions) (*Decontam, error) {
	if len(o.Against) == 0 {
		return nil, errors.New("stage decontam needs at least one benchmark pool (--against POOL_OR_DIR)")
	}
	d := &Decontam{N: o.N, Ratio: o.Ratio}
	if d.N == 0 {
		d.N = DefaultDecontamN
	}
	if d.Ratio == 0 {
		d.Ratio = DefaultDecontamRatio
	}
	if d.N < 2 || d.Ratio <= 0 || d.Ratio > 1 {
		return nil, fmt.Errorf("decontam: n-gram size %d (want ≥ 2), ratio %g (want 0 < r ≤ 1)", d.N, d.Ratio)
	}
	lim := o.Limits
	if lim == (bundle.Limits{}) {
		lim = bundle.DefaultLimits()
	}
	for _, spec := range o.Against {
		if err := d.load(spec, lim); err != nil {
			return nil, fmt.Errorf("decontam: benchmark %s: %w", spec, err)
		}
	}
	if len(d.bench) == 0 {
		return nil, fmt.Errorf("decontam: the benchmark pools %s hold no task", strings.Join(o.Against, ", "))
	}
	d.index()
	return d, nil
}

func (d *Decontam) load(spec string, lim bundle.Limits) error {
	src, err := pool.Open(spec)
	if err != nil {
		return err
	}
	keep := bundle.RetainLimits{MaxFile: 1 << 20, MaxTotal: 1 << 20, Only: []string{"instruction.md"}}
	// Rows are decoded on every core and added in pool order (so the
	// first unreadable row is the one reported, and task ids are stable).
	var firstErr error
	s := stream.New().WithMaxGoroutines(runtime.GOMAXPROCS(0))
	err = src.Each(context.Background(), nil, func(rec pool.Record) error {
		if firstErr != nil {
			return firstErr
		}
		s.Go(func() stream.Callback {
			t, err := readBenchTask(spec, rec, lim, keep)
			return func() {
				if firstErr == nil && err != nil {
					firstErr = err
				}
				if firstErr == nil {
					d.bench = append(d.bench, t)
				}
			}
		})
		return nil
	})
	s.Wait()
	if firstErr != nil {
		return firstErr
	}
	return err
}

// readBenchTask decodes one benchmark row: its instruction's word hashes.
func readBenchTask(spec string, rec pool.Record, lim bundle.Limits, keep bundle.RetainLimits) (benchTask, error) {
	if rec.Err != nil {
		return benchTask{}, fmt.Errorf("%s: %w", rec.Origin(), rec.Err)
	}
	b, err := bundle.Scan(rec.Blob, lim, keep)
	if err != nil {
		return benchTask{}, fmt.Errorf("%s (%s): %w", rec.Origin(), rec.Path, err)
	}
	data, ok := b.Data("instruction.md")
	if !ok {
		return benchTask{}, fmt.Errorf("%s (%s): no readable instruction.md", rec.Origin(), rec.Path)
	}
	return benchTask{name: spec + ":" + rec.Path, hashes: similarity.WordHashesOf(data)}, nil
}

// index builds the sorted n-gram tables over the loaded benchmark tasks
// and their filters. Each table starts as every (n-gram, task) pair in
// task order, radix-sorted by hash (stable: a hash's tasks stay in order),
// then folded by runs.
func (d *Decontam) index() {
	var pairs int
	for _, t := range d.bench {
		pairs += max(len(t.hashes)-min(d.N, fuzzyGram)+1, 0)
	}
	posts, tmp := make([]postRow, 0, pairs), make([]postRow, pairs)
	var buf []uint64
	collect := func(n int) []postRow {
		posts = posts[:0]
		for i, t := range d.bench {
			buf = similarity.NGramHashes(buf[:0], t.hashes, n)
			for _, g := range buf {
				posts = append(posts, postRow{g, int32(i)})
			}
		}
		sortPosts(posts, tmp[:len(posts)])
		// Distinct pairs: a task holding an n-gram twice counts once.
		return slices.Compact(posts)
	}
	// The n-grams: those of more than common tasks are boilerplate and
	// left out.
	common := max(boilerplateMin, int(boilerplateShare*float64(len(d.bench))))
	d.gramBits, d.fuzzyBits = newBitFilter(), newBitFilter()
	d.grams = nil
	eachRun(collect(d.N), func(run []postRow) {
		if len(run) <= common {
			d.grams = append(d.grams, gramRow{run[0].g, run[0].id})
			d.gramBits.add(run[0].g)
		}
	})
	d.grams = slices.Clip(d.grams)
	// The 4-grams: those of more than commonGram tasks pick no candidate.
	ps := collect(fuzzyGram)
	d.fuzzy = make([]postRow, 0, len(ps))
	eachRun(ps, func(run []postRow) {
		if len(run) <= commonGram {
			d.fuzzy = append(d.fuzzy, run...)
			d.fuzzyBits.add(run[0].g)
		}
	})
}

// eachRun calls fn with each run of rows holding one hash, in order (ps is
// sorted by hash).
func eachRun(ps []postRow, fn func(run []postRow)) {
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].g == ps[i].g {
			j++
		}
		fn(ps[i:j])
		i = j
	}
}

// sortPosts sorts a by hash, stably, through tmp (as long as a): a
// comparison sort of a 500-task benchmark's 4-grams took five times as
// long.
func sortPosts(a, tmp []postRow) {
	radix.Stable(a, tmp, 64, func(p postRow) uint64 { return p.g })
}

// gramFirst is the first benchmark task holding n-gram g, if g is one of
// the benchmark's and not its boilerplate.
func (d *Decontam) gramFirst(g uint64) (int32, bool) {
	if !d.gramBits.has(g) {
		return 0, false
	}
	i, ok := slices.BinarySearchFunc(d.grams, g, func(r gramRow, g uint64) int { return cmp.Compare(r.g, g) })
	if !ok {
		return 0, false
	}
	return d.grams[i].first, true
}

// fuzzyTasks are the benchmark tasks holding 4-gram g (none when g is in
// more than commonGram of them).
func (d *Decontam) fuzzyTasks(g uint64) []postRow {
	if !d.fuzzyBits.has(g) {
		return nil
	}
	i, ok := slices.BinarySearchFunc(d.fuzzy, g, func(r postRow, g uint64) int { return cmp.Compare(r.g, g) })
	if !ok {
		return nil
	}
	j := i + 1
	for j < len(d.fuzzy) && d.fuzzy[j].g == g {
		j++
	}
	return d.fuzzy[i:j]
}

// Name implements pipeline.Stage.
func (*Decontam) Name() string { return StageDecontam }

// ObserveContent implements ContentObserver: decontam judges each task
// during validate's pass, from the instruction's word hashes near_dup
// reads too, and keeps only the drops (a few bytes per clean task) for
// Process.
func (d *Decontam) ObserveContent(t *pipeline.Task, c *Content) {
	var out *pipeline.Outcome
	if o := d.judge(context.Background(), c.Bundle, c.InstructionWords()); o.Verdict != pipeline.Keep {
		out = &o
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[*pipeline.Task]*pipeline.Outcome{}
	}
	d.seen[t] = out
}

// Process implements pipeline.ItemStage: the verdict ObserveContent took,
// or, for a task validate did not show it, one taken now.
func (d *Decontam) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	d.mu.Lock()
	out, seen := d.seen[it.Task]
	delete(d.seen, it.Task)
	d.mu.Unlock()
	if seen {
		if out == nil {
			return pipeline.KeepOutcome(ReasonClean, "")
		}
		return *out
	}
	if it.Bundle == nil {
		return pipeline.ErrorOutcome("decontam_no_bundle", "decontam ran without the decoded bundle")
	}
	return d.judge(ctx, it.Bundle, instructionWords(it.Bundle))
}

// judge decides one task from its instruction's word hashes hs.
func (d *Decontam) judge(ctx context.Context, b *bundle.Bundle, hs []uint64) pipeline.Outcome {
	grams := similarity.NGramHashes(make([]uint64, 0, max(len(hs)-d.N+1, 0)), hs, d.N)
	for i, g := range grams {
		id, ok := d.gramFirst(g)
		if !ok {
			continue
		}
		// Extend the span while the next n-grams are the same task's.
		end := i + d.N
		for end < len(hs) && end-i < maxSpanWords {
			if id2, ok := d.gramFirst(grams[end+1-d.N]); !ok || id2 != id {
				break
			}
			end++
		}
		data, _ := b.Data("instruction.md")
		words := similarity.Words(data) // the same words hs hashes
		return pipeline.DropOutcome(ReasonContaminated, fmt.Sprintf("%d-gram overlap with benchmark task %s: %q",
			d.N, d.bench[id].name, strings.Join(words[i:end], " ")))
	}
	// Fuzzy: the benchmark tasks sharing the most 4-grams get the ratio.
	counts := map[int32]int{}
	for _, g := range similarity.NGramHashes(grams[:0], hs, fuzzyGram) {
		for _, p := range d.fuzzyTasks(g) {
			counts[p.id]++
		}
	}
	type cand struct {
		id int32
		n  int
	}
	var cands []cand
	for id, n := range counts {
		if similarity.MaxIndelRatio(len(hs), len(d.bench[id].hashes)) >= d.Ratio {
			cands = append(cands, cand{id, n})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].n != cands[j].n {
			return cands[i].n > cands[j].n
		}
		return cands[i].id < cands[j].id
	})
	for _, c := range cands[:min(len(cands), fuzzyCandidates)] {
		if err := ctx.Err(); err != nil {
			return pipeline.ErrorOutcome("interrupted", err.Error())
		}
		if r := similarity.IndelRatio(hs, d.bench[c.id].hashes); r >= d.Ratio {
			return pipeline.DropOutcome(ReasonContaminated, fmt.Sprintf(
				"instruction is a fuzzy match of benchmark task %s: Indel ratio %.2f on normalised words (threshold %.2f); no %d-gram in common",
				d.bench[c.id].name, r, d.Ratio, d.N))
		}
	}
	return pipeline.KeepOutcome(ReasonClean, "")
}

// AddAgainstStages adds to a stage list the stages that join the default
// list when benchmark pools are given (decontam), each right after
// near_dup (or dedup, or the first stage) unless already listed.
func AddAgainstStages(names []string) []string {
	out := append([]string(nil), names...)
	for _, s := range Stages() {
		if !s.WithAgainst || containsName(out, s.Name) {
			continue
		}
		at := 1
		for i, n := range out {
			if n == StageNearDup || n == StageDedup && at <= i {
				at = i + 1
			}
		}
		out = append(out[:at], append([]string{s.Name}, out[at:]...)...)
	}
	return out
}

func containsName(names []string, n string) bool {
	for _, m := range names {
		if m == n {
			return true
		}
	}
	return false
}
