package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sourcegraph/conc/stream"
	"golang.org/x/sync/semaphore"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/internal/buflist"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
)

// Reason codes decided by the engine itself.
const (
	// ReasonPoolChanged: a row read again for a later pass is no longer
	// the task the intake stage saw.
	ReasonPoolChanged = "pool_changed"
	// ReasonStageInternal: the stage panicked on the task.
	ReasonStageInternal = "stage_internal_error"
)

// inflightBytes caps the blob bytes held by tasks in flight.
const inflightBytes = 48 << 20

// cheapBatch and batchBytesCap bound the tasks handed to one goroutine at
// a time when every stage of a pass is cheap.
const (
	cheapBatch    = 32
	batchBytesCap = 1 << 20
)

// DecisionSink receives decisions in order. It is called from one
// goroutine at a time.
type DecisionSink interface {
	Write(Decision) error
}

// Progress reports work done in the current pass.
type Progress interface {
	// Begin starts a pass over total tasks named after its stages.
	Begin(name string, total int64)
	// Advance records n more tasks done.
	Advance(n int64)
	// End finishes the pass.
	End()
}

// Engine runs stages over a pool.
type Engine struct {
	Source  pool.Source
	Stages  []Stage
	Workers int           // concurrent tasks in item stages; default GOMAXPROCS
	Limits  bundle.Limits // decoder limits; zero means bundle.DefaultLimits
	Sink    DecisionSink
	Logger  *slog.Logger
	// Progress, when set, receives pass progress.
	Progress Progress
	// Shard, when enabled, restricts the run to a slice of the pool: the
	// intake stage's content hash decides which tasks are in it, the others
	// leave no trace (no decision, no funnel count, no manifest row).
	Shard Shard
	// RetainBlobs, when positive, holds copies of the bundles of small
	// tasks that pass the first segment, up to that many bytes in all, so
	// the output is written without decoding the pool a second time (see
	// writeOutput). The copies live in an arena outside the Go heap until
	// Result.ReleaseBlobs.
	RetainBlobs int64

	intake Intake // Stages[0], set by Run
}

// retainMaxBlob is the largest bundle RetainBlobs holds: re-reading a
// large row costs little per byte, and big bundles would crowd out the
// thousands of small ones the cache saves a second decode for.
const retainMaxBlob = 256 << 10

// Result is what a run produced.
type Result struct {
	Tasks       []*Task // every input row, in pool order
	Stages      []*StageSummary
	Interrupted bool
	arena       *blobArena       // the bundles held for the output (Engine.RetainBlobs)
	blobs       map[*Task][]byte // the held bundles, in the arena; the output reads the kept tasks'
	outOfShard  map[*Task]bool   // tasks the intake placed outside the run's shard
	// shardMu guards outOfShard: the reader marks the rows the intake
	// decides without decoding, the sink the ones it placed after hashing.
	shardMu sync.Mutex
}

// ReleaseBlobs frees the bundles the engine held for the output.
func (r *Result) ReleaseBlobs() {
	if r.arena == nil {
		return
	}
	r.blobs = nil
	r.arena.release()
	r.arena = nil
}

func (r *Result) setOutOfShard(t *Task) {
	r.shardMu.Lock()
	defer r.shardMu.Unlock()
	if r.outOfShard == nil {
		r.outOfShard = make(map[*Task]bool)
	}
	r.outOfShard[t], t.Alive = true, false
}

// Kept returns the tasks that survived every stage, in pool order.
func (r *Result) Kept() []*Task {
	var out []*Task
	for _, t := range r.Tasks {
		if t.Alive {
			out = append(out, t)
		}
	}
	return out
}

// Errors is the number of tasks some stage could not decide.
func (r *Result) Errors() int64 {
	var n int64
	for _, s := range r.Stages {
		n += s.Errors
	}
	return n
}

type segment struct {
	items []ItemStage
	set   SetStage
}

// Run executes the stages. It returns ctx's error (with a consistent,
// partial Result) when interrupted, and an error for failures that stop the
// whole run (an unreadable pool file, a sink that cannot write). A broken
// task never stops the run.
func (e *Engine) Run(ctx context.Context) (*Result, error) {
	if e.Workers <= 0 {
		e.Workers = runtime.GOMAXPROCS(0)
	}
	if e.Limits == (bundle.Limits{}) {
		e.Limits = bundle.DefaultLimits()
	}
	if e.Logger == nil {
		e.Logger = slog.New(slog.DiscardHandler)
	}
	segs, err := plan(e.Stages)
	if err != nil {
		return nil, err
	}
	e.intake = e.Stages[0].(Intake)
	res := &Result{}
	if e.RetainBlobs > 0 {
		res.arena = newBlobArena(e.RetainBlobs)
		res.blobs = make(map[*Task][]byte)
	}
	sums := make(map[string]*StageSummary)
	for _, s := range e.Stages {
		sum := rundir.NewStageSummary(s.Name())
		sums[s.Name()] = sum
		res.Stages = append(res.Stages, sum)
	}
	for i, seg := range segs {
		var err error
		if len(seg.items) > 0 {
			err = e.runItems(ctx, i == 0, seg.items, res, sums)
			if i == 0 && e.Shard.Enabled() {
				res.Tasks = slices.DeleteFunc(res.Tasks, func(t *Task) bool { return res.outOfShard[t] })
			}
		} else {
			err = e.runSet(ctx, seg.set, res, sums[seg.set.Name()])
		}
		if err != nil {
			if ctx.Err() != nil {
				res.Interrupted = true
				return res, ctx.Err()
			}
			return res, err
		}
	}
	return res, nil
}

// plan groups stages into segments. The first stage must be an Intake:
// it is what turns rows into tasks.
func plan(stages []Stage) ([]segment, error) {
	if len(stages) == 0 {
		return nil, errors.New("no stages")
	}
	if _, ok := stages[0].(Intake); !ok {
		return nil, fmt.Errorf("the first stage (%s) does not turn pool rows into tasks", stages[0].Name())
	}
	var segs []segment
	seen := map[string]bool{}
	for _, s := range stages {
		if seen[s.Name()] {
			return nil, fmt.Errorf("stage %s listed twice", s.Name())
		}
		seen[s.Name()] = true
		switch st := s.(type) {
		case ItemStage:
			if len(segs) == 0 || segs[len(segs)-1].set != nil {
				segs = append(segs, segment{})
			}
			segs[len(segs)-1].items = append(segs[len(segs)-1].items, st)
		case SetStage:
			segs = append(segs, segment{set: st})
		default:
			return nil, fmt.Errorf("stage %s is neither an item nor a set stage", s.Name())
		}
	}
	return segs, nil
}

// result of one task's trip through a segment.
type itemResult struct {
	task      *Task
	blob      []byte    // the bundle, when the task passed and may be retained
	outcomes  []Outcome // one per stage reached
	durations []time.Duration
	skipped   bool // interrupted before a decision
	// outOfShard: the intake found the task outside the run's shard.
	outOfShard bool
}

func (e *Engine) runItems(ctx context.Context, first bool, stages []ItemStage, res *Result, sums map[string]*StageSummary) error {
	names := make([]string, len(stages))
	for i, s := range stages {
		names[i] = s.Name()
	}
	start := time.Now()
	total := e.Source.Len()
	var alive map[int64]*Task
	if !first {
		alive = make(map[int64]*Task)
		for _, t := range res.Tasks {
			if t.Alive {
				alive[t.Index] = t
			}
		}
		total = int64(len(alive))
	}
	if e.Progress != nil {
		e.Progress.Begin(strings.Join(names, "+"), total)
		defer e.Progress.End()
	}
	e.Logger.Info("pass started", "stages", names, "tasks", total)

	// Bound the bytes of blobs in flight (queued, processing or waiting
	// for their ordered callback): with 10 MB bundles the stream's queue
	// alone would otherwise hold several of them.
	budget := semaphore.NewWeighted(inflightBytes)
	var seenPaths pool.PathSet
	interrupted := false // set by the (sequential) callbacks
	var sinkErr error
	// sinkFailed tells the reader (another goroutine) to stop once a
	// decision could not be written; sinkErr itself is the sink's.
	var sinkFailed atomic.Bool
	var busy = make([]time.Duration, len(stages))
	s := stream.New().WithMaxGoroutines(e.Workers)
	skip := func(idx int64) bool { return alive != nil && alive[idx] == nil }

	// Cheap stages take tens of microseconds per task, about what handing
	// a task to a goroutine and back costs: they get tasks in batches.
	// Sandbox stages get one task per goroutine so every worker stays busy.
	maxBatch := cheapBatch
	for _, st := range stages {
		if _, ok := st.(Expensive); ok {
			maxBatch = 1
		}
	}
	type entry struct {
		task    *Task
		rec     pool.Record
		decided *Outcome // decided without decoding (Intake.Admit)
		r       itemResult
	}
	var batch []entry
	var batchBytes int64
	deliver := func(en *entry) {
		if interrupted {
			return
		}
		if en.decided != nil {
			e.record(en.task, []Outcome{*en.decided}, []time.Duration{0}, names[:1], sums, &sinkErr)
			sinkFailed.Store(sinkErr != nil)
			if e.Progress != nil {
				e.Progress.Advance(1)
			}
			return
		}
		r := en.r
		// After the first task that was interrupted undecided, record
		// nothing more: decisions stay a prefix of the pool order, which
		// keeps resuming simple.
		if r.skipped {
			interrupted = true
			return
		}
		if r.outOfShard {
			res.setOutOfShard(en.task)
			if e.Progress != nil {
				e.Progress.Advance(1)
			}
			return
		}
		for i, d := range r.durations {
			busy[i] += d
		}
		e.record(en.task, r.outcomes, r.durations, names, sums, &sinkErr)
		sinkFailed.Store(sinkErr != nil)
		if r.blob != nil && en.task.Alive && res.arena != nil {
			res.blobs[en.task] = res.arena.add(r.blob)
		}
		if e.Progress != nil {
			e.Progress.Advance(1)
		}
	}
	// Blobs a source lends (pool.Lender) are copied into the batch's slab,
	// which is recycled once the batch is delivered: a fresh copy of every
	// blob was garbage the size of the pool, and fresh pages to fault in.
	lender, borrowing := e.Source.(pool.Lender)
	slabs := buflist.New(slabSize, 16)
	var slab []byte // the current batch's slab
	submit := func() error {
		if len(batch) == 0 {
			return nil
		}
		b, sl := batch, slab
		slab = nil
		weight := min(batchBytes+int64(len(b)), inflightBytes)
		batch, batchBytes = make([]entry, 0, maxBatch), 0
		if err := budget.Acquire(ctx, weight); err != nil {
			return err
		}
		s.Go(func() stream.Callback {
			for i := range b {
				if b[i].decided == nil {
					b[i].r = e.process(ctx, first, stages, b[i].task, &b[i].rec)
				}
			}
			budget.Release(weight)
			return func() {
				for i := range b {
					deliver(&b[i])
				}
				slabs.Put(sl) // deliver copied what the output keeps
			}
		})
		return nil
	}
	// own makes a lent blob the batch's: a copy in the slab (the batch is
	// submitted first when the slab is full), or its own for large ones.
	own := func(rec *pool.Record) error {
		n := len(rec.Blob)
		switch {
		case !borrowing || n == 0:
			return nil
		case n > slabMaxBlob:
			rec.Blob = bytes.Clone(rec.Blob)
			return nil
		case slab != nil && cap(slab)-len(slab) < n:
			if err := submit(); err != nil {
				return err
			}
		}
		if slab == nil {
			slab = slabs.Get(0)
		}
		start := len(slab)
		slab = append(slab, rec.Blob...)
		rec.Blob = slab[start:len(slab):len(slab)]
		return nil
	}
	each := e.Source.Each
	if borrowing {
		each = lender.EachBorrowed
	}
	readErr := each(ctx, skip, func(rec pool.Record) error {
		if sinkFailed.Load() {
			return errSinkFailed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var task *Task
		if first {
			// Room for two marks (the intake and the next stage): growing
			// from one left a garbage array per task. Not one per stage:
			// a pool of 100K tasks mostly dropped early would hold them
			// (record grows a survivor's to one per stage at once).
			task = &Task{Index: rec.Index, Path: rec.Path, BlobBytes: int64(len(rec.Blob)), Alive: true,
				Marks: make([]StageMark, 0, min(2, len(e.Stages)))}
			res.Tasks = append(res.Tasks, task)
			if out, bad := e.intake.Admit(rec, &seenPaths); bad {
				if !e.Shard.Has("", rec.Path, rec.Blob) {
					res.setOutOfShard(task)
					return nil
				}
				// Decided without decoding: emitted in order with its batch.
				batch = append(batch, entry{task: task, decided: &out})
			} else {
				if err := own(&rec); err != nil {
					return err
				}
				batch = append(batch, entry{task: task, rec: rec})
				batchBytes += int64(len(rec.Blob))
			}
		} else {
			if err := own(&rec); err != nil {
				return err
			}
			batch = append(batch, entry{task: alive[rec.Index], rec: rec})
			batchBytes += int64(len(rec.Blob))
		}
		if len(batch) >= maxBatch || batchBytes >= batchBytesCap {
			return submit()
		}
		return nil
	})
	if readErr == nil {
		readErr = submit()
	}
	s.Wait()
	wall := time.Since(start).Seconds()
	var busyTotal time.Duration
	for _, d := range busy {
		busyTotal += d
	}
	for i, name := range names {
		sum := sums[name]
		sum.BusySeconds += busy[i].Seconds()
		if busyTotal > 0 {
			sum.Seconds += wall * float64(busy[i]) / float64(busyTotal)
		} else if i == 0 {
			sum.Seconds += wall
		}
	}
	e.Logger.Info("pass finished", "stages", names, "seconds", round(wall))
	if sinkErr != nil {
		return sinkErr
	}
	if readErr != nil {
		return fmt.Errorf("reading pool %s: %w", e.Source, readErr)
	}
	return ctx.Err()
}

// errSinkFailed stops the reader once a decision could not be written (the
// pass then returns the sink's own error).
var errSinkFailed = errors.New("the decision sink failed")

// Slabs hold the blobs of a batch (see runItems).
const (
	slabSize    = 256 << 10
	slabMaxBlob = 64 << 10 // larger blobs get their own copy
)

func (e *Engine) process(ctx context.Context, first bool, stages []ItemStage, task *Task, rec *pool.Record) (r itemResult) {
	r.task = task
	defer func() {
		// The result waits for its callback without the bytes, unless they
		// may be held for the output: the callback holds them if the task
		// is still alive once recorded.
		if first && e.RetainBlobs > 0 && len(rec.Blob) <= retainMaxBlob {
			r.blob = rec.Blob
		}
		rec.Blob = nil
	}()
	if ctx.Err() != nil {
		r.skipped = true
		return r
	}
	it := &Item{Task: task, Record: *rec}
	if !first {
		b, info, err := e.intake.Reopen(*rec, task, e.Limits)
		if err != nil {
			r.outcomes = []Outcome{ErrorOutcome(ReasonPoolChanged, "the pool changed during the run: this row no longer matches what validate saw")}
			r.durations = []time.Duration{0}
			return r
		}
		it.Bundle, it.Info = b, info
	}
	for i, st := range stages {
		t0 := time.Now()
		out := safeProcess(ctx, st, it)
		if first && i == 0 && !e.Shard.Has(task.Hash, rec.Path, rec.Blob) {
			r.outOfShard = true
			return r
		}
		r.durations = append(r.durations, time.Since(t0))
		if ctx.Err() != nil && out.Verdict != Keep && out.Verdict != Drop {
			r.skipped = true // interrupted: nothing was decided
			return r
		}
		r.outcomes = append(r.outcomes, out)
		if out.Verdict != Keep {
			break
		}
	}
	return r
}

// safeProcess turns a panicking stage into an error outcome for that task.
func safeProcess(ctx context.Context, st ItemStage, it *Item) (out Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = ErrorOutcome(ReasonStageInternal, fmt.Sprintf("stage %s panicked: %v", st.Name(), p))
		}
	}()
	return st.Process(ctx, it)
}

// record applies a task's outcomes to its state, the summaries and the sink.
// It runs on one goroutine at a time, in pool order.
func (e *Engine) record(task *Task, outs []Outcome, durs []time.Duration, names []string, sums map[string]*StageSummary, sinkErr *error) {
	for i, out := range outs {
		sum := sums[names[i]]
		sum.In++
		switch out.Verdict {
		case Keep:
			sum.Kept++
		case Drop:
			sum.Dropped++
			sum.DroppedByReason[out.Reason]++
			task.Alive = false
		default:
			sum.Errors++
			sum.ErrorsByReason[out.Reason]++
			task.Alive = false
		}
		for _, f := range out.Flags {
			sum.FlaggedByReason[f]++
		}
		task.LastStage = names[i]
		mark := StageMark{Stage: names[i], Verdict: out.Verdict, Reason: out.Reason}
		ms := MarkMeasure{ScoreSeconds: out.ScoreSeconds, ScoreRate: out.ScoreRate, Proof: out.Proof}
		if ev := out.Evidence; ev != nil {
			ms.Runs, ms.Passes, ms.SandboxSeconds, ms.FromLedger = int32(ev.Runs), int32(ev.Passes), ev.SandboxSeconds, ev.FromLedger
			if ev.FromLedger {
				sum.FromLedger++
			} else {
				sum.Runs += int64(ev.Runs)
				sum.SandboxSeconds += ev.SandboxSeconds
			}
		}
		sum.AddProof(out.Proof, out.Verdict, out.Evidence)
		if i < len(durs) {
			mark.Seconds = durs[i].Seconds()
		}
		mark.SetMeasure(ms)
		if len(task.Marks) == cap(task.Marks) {
			// One array of the right size, not append's doublings (a
			// mark per stage is the most a task gets in this run).
			task.Marks = slices.Grow(task.Marks, max(len(e.Stages)-len(task.Marks), 1))
		}
		task.Marks = append(task.Marks, mark)
		if *sinkErr == nil {
			*sinkErr = e.Sink.Write(Decision{Index: task.Index, Path: task.Path, Stage: names[i],
				Verdict: out.Verdict, Reason: out.Reason, Detail: out.Detail, Hash: task.Hash, Flags: out.Flags,
				ScoreSeconds: out.ScoreSeconds, ScoreRate: out.ScoreRate, Evidence: out.Evidence, Proof: out.Proof})
		}
	}
}

func (e *Engine) runSet(ctx context.Context, st SetStage, res *Result, sum *StageSummary) error {
	var tasks []*Task
	for _, t := range res.Tasks {
		if t.Alive {
			tasks = append(tasks, t)
		}
	}
	start := time.Now()
	outs, err := st.Decide(ctx, tasks)
	if err != nil {
		return fmt.Errorf("stage %s: %w", st.Name(), err)
	}
	if len(outs) != len(tasks) {
		return fmt.Errorf("stage %s returned %d outcomes for %d tasks", st.Name(), len(outs), len(tasks))
	}
	var sinkErr error
	names, sums := []string{st.Name()}, map[string]*StageSummary{st.Name(): sum}
	for i, t := range tasks {
		e.record(t, outs[i:i+1], nil, names, sums, &sinkErr)
	}
	d := time.Since(start).Seconds()
	sum.Seconds += d
	sum.BusySeconds += d
	e.Logger.Info("stage finished", "stage", st.Name(), "in", sum.In, "kept", sum.Kept, "dropped", sum.Dropped)
	return sinkErr
}

func round(f float64) float64 { return float64(int64(f*1000)) / 1000 }

// SortedReasons lists a reason histogram's keys, most frequent first.
func SortedReasons(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
