package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/otcurate/otcurate/atomicfile"
	"github.com/otcurate/otcurate/pool"
)

// MergeOptions configure Merge.
type MergeOptions struct {
	// RunDirs are the shard runs (`build --shard I/N`), one per shard.
	RunDirs []string
	// RunDir receives the merged decisions, ledger, manifest and summary.
	RunDir string
	// Output is the merged dataset (a folder of HF shards when Shards > 1).
	Output string
	Shards int
	// Stages are the set stages deferred to the merge (select), run over
	// the survivors of every shard in pool order.
	Stages []SetStage
	Logger *slog.Logger
}

// shardRun is one shard's run directory, loaded.
type shardRun struct {
	dir     string
	sum     Summary
	shard   Shard
	tasks   []*Task
	outputs []string
}

// Merge combines the run directories of N shards of one pool into the run
// a single machine would have produced: every task's marks and decisions,
// the funnel summed per stage, the ledger (so a later single run over the
// whole pool resumes from it), then the deferred set stages (select) over
// all survivors, the manifest, and the output dataset in pool order, read
// from the shards' outputs. The shards must cover 0..N-1 exactly once and
// have run the same stages on the same pool.
func Merge(ctx context.Context, o MergeOptions) (*Summary, *Result, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	runs, err := loadShardRuns(o.RunDirs)
	if err != nil {
		return nil, nil, err
	}
	stageNames := slices.Clone(runs[0].sum.Stages)
	for _, s := range o.Stages {
		if slices.Contains(stageNames, s.Name()) {
			return nil, nil, fmt.Errorf("merge: stage %s already ran in the shards", s.Name())
		}
		stageNames = append(stageNames, s.Name())
	}
	sum := &Summary{Tool: "otcurate", Pool: runs[0].sum.Pool, Stages: stageNames, StartedAt: time.Now().UTC(),
		Output: []string{}, PoolRows: runs[0].sum.PoolRows}
	res := &Result{}
	sums := map[string]*StageSummary{}
	for _, n := range stageNames {
		st := newStageSummary(n)
		sums[n] = st
		res.Stages = append(res.Stages, st)
	}
	seen := map[int64]string{}
	for _, r := range runs {
		sum.Merged = append(sum.Merged, r.dir)
		sum.LedgerHits += r.sum.LedgerHits
		sum.Interrupted = sum.Interrupted || r.sum.Interrupted
		for _, t := range r.tasks {
			if prev, dup := seen[t.Index]; dup {
				return nil, nil, fmt.Errorf("merge: pool row %d is in both %s and %s", t.Index, prev, r.dir)
			}
			seen[t.Index] = r.dir
			res.Tasks = append(res.Tasks, t)
		}
		for _, f := range r.sum.Funnel {
			addSummary(sums[f.Stage], f)
		}
	}
	if sum.Interrupted {
		return nil, nil, errors.New("merge: a shard run was interrupted; re-run it to completion first")
	}
	sort.Slice(res.Tasks, func(i, j int) bool { return res.Tasks[i].Index < res.Tasks[j].Index })

	if err := os.MkdirAll(o.RunDir, 0o755); err != nil {
		return nil, nil, err
	}
	var decisions []Decision
	for _, r := range runs {
		ds, err := ReadDecisions(filepath.Join(r.dir, DecisionsFile))
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		decisions = append(decisions, ds...)
	}
	// The shards' outputs hold their survivors: index them before the
	// deferred stages drop some.
	var src *mergedSource
	if o.Output != "" {
		if src, err = newMergedSource(runs, res.Tasks); err != nil {
			return nil, nil, err
		}
	}
	eng := &Engine{Logger: o.Logger}
	for _, st := range o.Stages {
		sink := &sliceSink{}
		eng.Sink = sink
		if err := eng.runSet(ctx, st, res, sums[st.Name()]); err != nil {
			return nil, nil, err
		}
		decisions = append(decisions, sink.ds...)
	}
	pos := map[string]int{}
	for i, n := range stageNames {
		pos[n] = i
	}
	sort.SliceStable(decisions, func(i, j int) bool {
		a, b := decisions[i], decisions[j]
		if pos[a.Stage] != pos[b.Stage] {
			return pos[a.Stage] < pos[b.Stage]
		}
		return a.Index < b.Index
	})
	if err := writeDecisionFile(filepath.Join(o.RunDir, DecisionsFile), decisions); err != nil {
		return nil, nil, err
	}
	if err := mergeLedgers(runs, filepath.Join(o.RunDir, LedgerFile)); err != nil {
		return nil, nil, err
	}

	sum.Funnel = res.Stages
	sum.TasksIn = int64(len(res.Tasks))
	sum.Errors = res.Errors()
	sum.TasksKept = int64(len(res.Kept()))
	if sum.PoolRows > 0 && sum.TasksIn != sum.PoolRows {
		return nil, nil, fmt.Errorf("merge: the shards hold %d tasks of a %d-row pool: a shard is missing or ran on another pool", sum.TasksIn, sum.PoolRows)
	}
	var runErr error
	if o.Output != "" {
		files, err := writeOutput(ctx, BuildOptions{Source: src, Output: o.Output, Shards: o.Shards}, res)
		sum.Output, runErr = files, err
	}
	if runErr == nil {
		runErr = WriteManifest(filepath.Join(o.RunDir, ManifestFile), res.Tasks, stageNames)
	}
	sum.FinishedAt = time.Now().UTC()
	sum.WallSeconds = round(sum.FinishedAt.Sub(sum.StartedAt).Seconds())
	if err := atomicfile.WriteJSON(filepath.Join(o.RunDir, SummaryFile), sum); err != nil && runErr == nil {
		runErr = err
	}
	return sum, res, runErr
}

func loadShardRuns(dirs []string) ([]*shardRun, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no run directories")
	}
	var runs []*shardRun
	byIndex := map[int]string{}
	for _, d := range dirs {
		r := &shardRun{dir: d}
		data, err := os.ReadFile(filepath.Join(d, SummaryFile))
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if err := json.Unmarshal(data, &r.sum); err != nil {
			return nil, fmt.Errorf("merge: %s: %w", filepath.Join(d, SummaryFile), err)
		}
		if r.sum.Shard == "" {
			r.shard = Shard{Index: 0, Count: 1}
		} else if r.shard, err = ParseShard(r.sum.Shard); err != nil {
			return nil, fmt.Errorf("merge: %s: %w", d, err)
		}
		if prev, dup := byIndex[r.shard.Index]; dup {
			return nil, fmt.Errorf("merge: %s and %s are both shard %s", prev, d, r.shard)
		}
		byIndex[r.shard.Index] = d
		if first := runs; len(first) > 0 {
			f := first[0]
			switch {
			case f.shard.Count != r.shard.Count:
				return nil, fmt.Errorf("merge: %s is shard %s but %s is shard %s", f.dir, f.shard, d, r.shard)
			case !slices.Equal(f.sum.Stages, r.sum.Stages):
				return nil, fmt.Errorf("merge: %s ran stages %v but %s ran %v", f.dir, f.sum.Stages, d, r.sum.Stages)
			case f.sum.PoolRows != r.sum.PoolRows:
				return nil, fmt.Errorf("merge: %s read a %d-row pool but %s a %d-row one", f.dir, f.sum.PoolRows, d, r.sum.PoolRows)
			}
		}
		if r.tasks, err = ReadManifest(filepath.Join(d, ManifestFile), r.sum.Stages); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		r.outputs = r.sum.Output
		runs = append(runs, r)
	}
	if n := runs[0].shard.Count; len(runs) != n {
		return nil, fmt.Errorf("merge: %d run directories for %d shards", len(runs), n)
	}
	return runs, nil
}

func addSummary(dst, src *StageSummary) {
	if dst == nil {
		return
	}
	dst.In += src.In
	dst.Kept += src.Kept
	dst.Dropped += src.Dropped
	dst.Errors += src.Errors
	for k, v := range src.DroppedByReason {
		dst.DroppedByReason[k] += v
	}
	for k, v := range src.ErrorsByReason {
		dst.ErrorsByReason[k] += v
	}
	for k, v := range src.FlaggedByReason {
		dst.FlaggedByReason[k] += v
	}
	dst.Seconds += src.Seconds // summed over shards (machine time, not the merged wall time)
	dst.BusySeconds += src.BusySeconds
	dst.Runs += src.Runs
	dst.SandboxSeconds += src.SandboxSeconds
	dst.FromLedger += src.FromLedger
}

type sliceSink struct{ ds []Decision }

func (s *sliceSink) Write(d Decision) error { s.ds = append(s.ds, d); return nil }

func writeDecisionFile(name string, ds []Decision) error {
	s, err := newJSONLSink(name)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if err := s.Write(d); err != nil {
			s.Close()
			return err
		}
	}
	return s.Close()
}

// mergeLedgers concatenates the shards' ledgers (entries are keyed by
// content hash, so they do not collide).
func mergeLedgers(runs []*shardRun, name string) error {
	var b bytes.Buffer
	for _, r := range runs {
		data, err := os.ReadFile(filepath.Join(r.dir, LedgerFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			b.Write(data[:i+1]) // drop a torn last line
		}
	}
	return atomicfile.Write(name, b.Bytes())
}

// mergedSource reads the shards' output datasets as one pool in pool
// order: each row gets its pool index back (from the manifests) and the
// shards, each in pool order, are merged by index.
type mergedSource struct {
	parts []pool.Source
	index map[string]int64
	n     int64
}

func newMergedSource(runs []*shardRun, tasks []*Task) (*mergedSource, error) {
	m := &mergedSource{index: map[string]int64{}}
	for _, t := range tasks {
		if t.Alive {
			m.index[t.Path] = t.Index
		}
	}
	for _, r := range runs {
		for _, o := range r.outputs {
			src, err := pool.Open(o)
			if err != nil {
				return nil, fmt.Errorf("merge: shard output of %s: %w", r.dir, err)
			}
			m.parts = append(m.parts, src)
			m.n += src.Len()
		}
	}
	return m, nil
}

func (m *mergedSource) Len() int64     { return m.n }
func (m *mergedSource) String() string { return fmt.Sprintf("%d shard outputs", len(m.parts)) }

// Each implements pool.Source.
func (m *mergedSource) Each(parent context.Context, skip func(int64) bool, fn func(pool.Record) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	chans := make([]chan pool.Record, len(m.parts))
	errs := make([]error, len(m.parts))
	var wg sync.WaitGroup
	for i, p := range m.parts {
		ch := make(chan pool.Record, 2)
		chans[i] = ch
		wg.Go(func() {
			defer close(ch)
			errs[i] = p.Each(ctx, nil, func(r pool.Record) error {
				idx, ok := m.index[r.Path]
				if !ok {
					return fmt.Errorf("%s: task %q is not a survivor in the shard manifests", r.Origin(), r.Path)
				}
				if skip != nil && skip(idx) {
					return nil
				}
				r.Index, r.Blob = idx, bytes.Clone(r.Blob)
				select {
				case ch <- r:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		})
	}
	heads := make([]*pool.Record, len(chans))
	next := func(i int) {
		if r, ok := <-chans[i]; ok {
			heads[i] = &r
		} else {
			heads[i] = nil
		}
	}
	for i := range chans {
		next(i)
	}
	var err error
	for {
		best := -1
		for i, h := range heads {
			if h != nil && (best < 0 || h.Index < heads[best].Index) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		if err = fn(*heads[best]); err != nil {
			break
		}
		next(best)
	}
	cancel()
	for i := range chans {
		for range chans[i] { // let the readers finish
		}
	}
	wg.Wait()
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return e
		}
	}
	return parent.Err()
}
