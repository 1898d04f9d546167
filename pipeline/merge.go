package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/otcurate/otcurate/rundir"
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
	// Layout is the run-directory format of the stages (their scores and
	// evidence columns).
	Layout rundir.Layout
	// Solutions is the name of the store of discovered solutions inside a
	// run directory (filters.SolutionStore); every shard's is copied into
	// the merged run's (see rundir.MergeSolutions). "" copies none.
	Solutions string
	Logger    *slog.Logger
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
	if o.Layout == nil {
		return nil, nil, fmt.Errorf("merge: the stages' layout (MergeOptions.Layout) is required")
	}
	runs, err := rundir.LoadShardRuns(o.RunDirs, o.Layout)
	if err != nil {
		return nil, nil, err
	}
	stageNames := slices.Clone(runs[0].Sum.Stages)
	for _, s := range o.Stages {
		if slices.Contains(stageNames, s.Name()) {
			return nil, nil, fmt.Errorf("merge: stage %s already ran in the shards", s.Name())
		}
		stageNames = append(stageNames, s.Name())
	}
	sum := &Summary{Tool: "otcurate", Pool: runs[0].Sum.Pool, Stages: stageNames, StartedAt: time.Now().UTC(),
		Output: []string{}, PoolRows: runs[0].Sum.PoolRows}
	res := &Result{}
	sums := map[string]*StageSummary{}
	for _, n := range stageNames {
		st := rundir.NewStageSummary(n)
		sums[n] = st
		res.Stages = append(res.Stages, st)
	}
	seen := map[int64]string{}
	for _, r := range runs {
		sum.Merged = append(sum.Merged, r.Dir)
		sum.LedgerHits += r.Sum.LedgerHits
		sum.Interrupted = sum.Interrupted || r.Sum.Interrupted
		for _, t := range r.Tasks {
			if prev, dup := seen[t.Index]; dup {
				return nil, nil, fmt.Errorf("merge: pool row %d is in both %s and %s", t.Index, prev, r.Dir)
			}
			seen[t.Index] = r.Dir
			res.Tasks = append(res.Tasks, t)
		}
		for _, f := range r.Sum.Funnel {
			if dst := sums[f.Stage]; dst != nil {
				dst.Add(f)
			}
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
		ds, err := rundir.ReadDecisions(filepath.Join(r.Dir, rundir.DecisionsFile), o.Layout)
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		decisions = append(decisions, ds...)
	}
	// The shards' outputs hold their survivors: index them before the
	// deferred stages drop some.
	var src *rundir.ShardOutputs
	if o.Output != "" {
		if src, err = rundir.OpenShardOutputs(runs, res.Tasks); err != nil {
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
	if err := rundir.WriteDecisions(filepath.Join(o.RunDir, rundir.DecisionsFile), decisions); err != nil {
		return nil, nil, err
	}
	if err := rundir.MergeLedgers(runs, filepath.Join(o.RunDir, rundir.LedgerFile)); err != nil {
		return nil, nil, err
	}
	if o.Solutions != "" {
		sm, err := rundir.MergeSolutions(runs, o.Solutions, filepath.Join(o.RunDir, o.Solutions))
		if err != nil {
			return nil, nil, err
		}
		for _, c := range sm.Conflicts {
			o.Logger.Warn("merge: two shards hold different discovered solutions under one task hash; the first was kept", "entry", c)
		}
		if sm.Copied+sm.Identical+len(sm.Conflicts) > 0 {
			o.Logger.Info("merge: discovered solutions", "copied", sm.Copied, "identical", sm.Identical, "conflicts", len(sm.Conflicts))
		}
	}

	sum.Funnel = res.Stages
	sum.TasksIn = int64(len(res.Tasks))
	sum.Errors = res.Errors()
	kept := res.Kept()
	sum.TasksKept = int64(len(kept))
	sum.KeptByProof = rundir.KeptByProof(kept)
	if sum.PoolRows > 0 && sum.TasksIn != sum.PoolRows {
		return nil, nil, fmt.Errorf("merge: the shards hold %d tasks of a %d-row pool: a shard is missing or ran on another pool", sum.TasksIn, sum.PoolRows)
	}
	var runErr error
	if o.Output != "" {
		files, err := writeOutput(ctx, BuildOptions{Source: src, Output: o.Output, Shards: o.Shards}, res, true)
		sum.Output, runErr = files, err
	}
	if runErr == nil {
		runErr = rundir.WriteManifest(filepath.Join(o.RunDir, rundir.ManifestFile), res.Tasks, stageNames, o.Layout)
	}
	sum.FinishedAt = time.Now().UTC()
	sum.WallSeconds = round(sum.FinishedAt.Sub(sum.StartedAt).Seconds())
	if err := rundir.WriteSummary(o.RunDir, sum); err != nil && runErr == nil {
		runErr = err
	}
	return sum, res, runErr
}

type sliceSink struct{ ds []Decision }

func (s *sliceSink) Write(d Decision) error { s.ds = append(s.ds, d); return nil }
