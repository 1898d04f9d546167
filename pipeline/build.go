package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/trace"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
	"golang.org/x/sync/semaphore"
)

// BuildOptions configure a curation run.
type BuildOptions struct {
	Source   pool.Source
	Stages   []Stage
	Output   string // dataset file; a directory of HF shards when Shards > 1; "" writes none
	Shards   int
	RunDir   string // "" keeps decisions in memory only (inspect, validate)
	Workers  int
	Limits   bundle.Limits
	Logger   *slog.Logger
	Progress Progress
	// OnDecision, when set, sees every decision (after the run dir does).
	OnDecision func(Decision)
	// AfterStages, when set, is called once the stages have finished
	// without error and RUN_DIR/decisions.jsonl is complete, before the
	// output and the manifest are written. It must not block: it is for
	// starting work that can overlap them (the report's reading).
	AfterStages func(res *Result)
	// Shard restricts the run to a slice of the pool (see Shard); the
	// shards' run directories are combined by Merge.
	Shard Shard
	// RetainBlobBytes caps the small bundles held in memory between the
	// first pass and the output, which spares decoding the pool twice (see
	// Engine.RetainBlobs). 0 means 64 MB; negative holds none.
	RetainBlobBytes int64
	// Attach, when set, may rewrite the bundles of kept tasks as the
	// output is written (--attach-solutions). The rows it wants are read
	// from the pool again, so it sees their solution_binary.
	Attach Attacher
}

// Attacher rewrites the bundle of some kept tasks for the output.
type Attacher interface {
	// Wants reports, from the task's metadata alone, whether Attach may
	// change its bundle. Tasks it does not want are written unchanged.
	Wants(t *Task) bool
	// Attach returns the bytes to write for t, whose pool row is rec
	// (solution_binary included). Returning rec.Blob leaves it unchanged;
	// an error stops the output.
	Attach(t *Task, rec pool.Record) ([]byte, error)
}

// Build runs the stages over the pool, writes the run directory and, unless
// interrupted, the output dataset holding the kept tasks in pool order. On
// interruption it returns ctx's error with a summary marked interrupted.
func Build(ctx context.Context, o BuildOptions) (*Summary, *Result, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	sum := &Summary{Tool: "otcurate", Pool: o.Source.String(), StartedAt: time.Now().UTC(), Output: []string{}}
	for _, s := range o.Stages {
		sum.Stages = append(sum.Stages, s.Name())
	}
	var sink DecisionSink = discardSink{}
	var js *rundir.DecisionWriter
	if o.RunDir != "" {
		if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("run dir: %w", err)
		}
		var err error
		js, err = rundir.CreateDecisions(filepath.Join(o.RunDir, rundir.DecisionsFile))
		if err != nil {
			return nil, nil, err
		}
		sink = js
	}
	if o.OnDecision != nil {
		sink = teeSink{sink, o.OnDecision}
	}
	layout := LayoutOf(o.Stages)
	var ledger *rundir.Ledger
	if o.RunDir != "" {
		stages := make([]Stage, len(o.Stages))
		for i, s := range o.Stages {
			stages[i] = s
			if _, ok := s.(Expensive); !ok {
				continue
			}
			if ledger == nil {
				var err error
				if ledger, err = rundir.OpenLedger(filepath.Join(o.RunDir, rundir.LedgerFile)); err != nil {
					return nil, nil, err
				}
				defer ledger.Close()
				o.Logger.Info("ledger", "file", filepath.Join(o.RunDir, rundir.LedgerFile), "outcomes", ledger.Len())
			}
			stages[i] = Cached(s.(ItemStage), ledger)
		}
		o.Stages = stages
	}
	eng := &Engine{Source: o.Source, Stages: o.Stages, Workers: o.Workers, Limits: o.Limits, RetainBlobs: retainFor(o),
		Sink: sink, Logger: o.Logger, Progress: o.Progress, Shard: o.Shard}
	if o.Shard.Enabled() {
		sum.Shard = o.Shard.String()
	}
	sum.PoolRows = o.Source.Len()
	region := trace.StartRegion(ctx, "stages")
	res, runErr := eng.Run(ctx)
	region.End()
	if res != nil {
		defer res.ReleaseBlobs()
	}
	// decisions.jsonl is complete once flushed; its fsync and close
	// overlap the output (they took ~10 ms on a 20K-task run).
	closed := make(chan error, 1)
	if js != nil {
		if err := js.Flush(); err != nil && runErr == nil {
			runErr = err
		}
		go func() { closed <- js.Close() }()
	} else {
		closed <- nil
	}
	if runErr == nil && res != nil && o.AfterStages != nil {
		o.AfterStages(res)
	}
	if ledger != nil {
		sum.LedgerHits = ledger.Hits()
	}
	if res != nil {
		sum.Funnel = res.Stages
		sum.TasksIn = int64(len(res.Tasks))
		sum.Errors = res.Errors()
		sum.Interrupted = res.Interrupted
		if !res.Interrupted {
			kept := res.Kept()
			sum.TasksKept = int64(len(kept))
			sum.KeptByProof = rundir.KeptByProof(kept)
		}
	}
	// The manifest (from memory) is written while the output is copied
	// (from the pool): the two share nothing and each keeps a core busy.
	manifestErr := make(chan error, 1)
	if runErr == nil && o.RunDir != "" && res != nil {
		go func() {
			defer trace.StartRegion(ctx, "manifest").End()
			manifestErr <- rundir.WriteManifest(filepath.Join(o.RunDir, rundir.ManifestFile), res.Tasks, sum.Stages, layout)
		}()
	} else {
		manifestErr <- nil
	}
	if runErr == nil && o.Output != "" {
		region := trace.StartRegion(ctx, "output")
		files, err := writeOutput(ctx, o, res, false)
		region.End()
		sum.Output = files
		if err != nil {
			runErr = err
			if ctx.Err() != nil {
				sum.Interrupted = true
			}
		}
	}
	if err := <-manifestErr; err != nil && runErr == nil {
		runErr = err
	}
	if err := <-closed; err != nil && runErr == nil {
		runErr = err
	}
	sum.FinishedAt = time.Now().UTC()
	sum.WallSeconds = round(sum.FinishedAt.Sub(sum.StartedAt).Seconds())
	if o.RunDir != "" && res != nil {
		if err := rundir.WriteSummary(o.RunDir, sum); err != nil && runErr == nil {
			runErr = err
		}
	}
	return sum, res, runErr
}

// retainBlobBytes caps the small bundles the engine holds for the output
// (see Engine.RetainBlobs): 20,000 pymethods-like tasks take about 26 MB.
const retainBlobBytes = 64 << 20

func retainFor(o BuildOptions) int64 {
	switch {
	case o.Output == "" || o.RetainBlobBytes < 0:
		return 0
	case o.RetainBlobBytes == 0:
		return retainBlobBytes
	}
	return o.RetainBlobBytes
}

// outputInflightBytes caps the blob bytes between the output's reader and
// writer (a 10 MB blob in flight at a time keeps the 10 MB-blob pool under
// its RSS target; small rows are thousands).
const outputInflightBytes = 16 << 20

func weightOf(rec pool.Record) int64 { return min(int64(len(rec.Blob))+1, outputInflightBytes) }

// writeOutput copies the kept rows, in pool order, into the dataset. The
// bundles the engine retained are written from memory; the others are read
// from the pool again, which must still hold the bundles the run decided
// on (their sizes are checked). fromOutputs says o.Source holds run
// outputs instead (merge: the shards' outputs), whose bundles
// --attach-solutions may have rewritten: only their paths are checked.
func writeOutput(ctx context.Context, o BuildOptions, res *Result, fromOutputs bool) ([]string, error) {
	keptList := res.Kept()
	reread := make(map[int64]*Task)
	attach := make(map[*Task]bool)
	for _, t := range keptList {
		if o.Attach != nil && o.Attach.Wants(t) {
			attach[t] = true
		}
		if res.blobs[t] == nil || attach[t] {
			reread[t.Index] = t
		}
	}
	skip := func(i int64) bool { return reread[i] == nil }
	// The pool is decoded on one goroutine while the output is encoded on
	// another; the rows between them are bounded in bytes, like the
	// engine's, so 10 MB blobs do not pile up.
	write := func(w interface{ Write(string, []byte) error }) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		budget := semaphore.NewWeighted(outputInflightBytes)
		recs := make(chan pool.Record, 64)
		readErr := make(chan error, 1)
		if len(reread) > 0 {
			go func() {
				defer close(recs)
				readErr <- o.Source.Each(ctx, skip, func(rec pool.Record) error {
					t := reread[rec.Index]
					if rec.Path != t.Path || !fromOutputs && int64(len(rec.Blob)) != t.BlobBytes {
						return fmt.Errorf("pool changed during the run: row %d (%s) differs from what was validated", rec.Index, t.Path)
					}
					if err := budget.Acquire(ctx, weightOf(rec)); err != nil {
						return err
					}
					select {
					case recs <- rec:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
			}()
		} else {
			close(recs)
			readErr <- nil
		}
		var werr error
		written := 0 // kept rows written, in order
		for _, t := range keptList {
			blob, held := res.blobs[t], int64(0) // held: budget taken by a row from the reader
			if reread[t.Index] != nil {
				rec, ok := <-recs
				if !ok {
					break // the reader stopped: its error says why
				}
				blob, held = rec.Blob, weightOf(rec)
				if rec.Index != t.Index {
					werr = fmt.Errorf("output: pool row %d read where row %d was expected", rec.Index, t.Index)
				} else if attach[t] {
					blob, werr = o.Attach.Attach(t, rec)
				}
			}
			if werr == nil {
				werr = w.Write(t.Path, blob)
			}
			budget.Release(held)
			if werr != nil {
				break
			}
			written++
		}
		if werr != nil {
			cancel() // stop the reader early; drain so it can exit
		}
		for rec := range recs {
			budget.Release(weightOf(rec))
		}
		if err := <-readErr; werr == nil && err != nil {
			return err
		}
		if werr == nil {
			werr = ctx.Err()
		}
		if werr == nil && written != len(keptList) {
			werr = fmt.Errorf("pool changed during the run: it ended before row %d (%s)", keptList[written].Index, keptList[written].Path)
		}
		return werr
	}
	if o.Shards > 1 {
		sw, err := pool.CreateSharded(o.Output, o.Shards, int64(len(keptList)), pool.WriterOptions{})
		if err != nil {
			return nil, err
		}
		if err := write(sw); err != nil {
			sw.Abort()
			return nil, err
		}
		return sw.Close()
	}
	w, err := pool.Create(o.Output, pool.WriterOptions{})
	if err != nil {
		return nil, err
	}
	if err := write(w); err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return []string{o.Output}, nil
}

type discardSink struct{}

func (discardSink) Write(Decision) error { return nil }

type teeSink struct {
	next DecisionSink
	fn   func(Decision)
}

func (t teeSink) Write(d Decision) error {
	err := t.next.Write(d)
	t.fn(d)
	return err
}
