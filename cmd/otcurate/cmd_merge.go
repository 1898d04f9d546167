package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/rundir"
)

func newMergeCmd(g *globals) *cobra.Command {
	var runDir, out, stratify string
	var target, shards int
	var seed int64
	cmd := &cobra.Command{
		Use:     "merge SHARD_RUN_DIR... --run-dir DIR -o OUT",
		GroupID: "curate",
		Short:   "Combine the runs of `build --shard I/N` into one run and dataset",
		Long: `merge combines the run directories of every shard of one pool (each made by
` + "`otcurate build --shard I/N`" + `, N of them) into the run one machine would have made:
decisions, ledger, manifest, summary and report, then runs near_dup_shards (near-duplicates across shards, from the sketches each
shard's near_dup saved) and the deferred select stage (--target, --seed, --stratify-by)
over every shard's survivors and writes the dataset
from the shards' outputs, in pool order. Shards are cut by content hash, so duplicates
share a shard and dedup per shard equals dedup of the whole pool.

The shards' discovered solutions (RUN_DIR/solutions) are copied into the merged run
directory; two shards holding different bytes for one task hash keep the first, with a
warning.`,
		Example: `  for i in 0 1 2 3; do otcurate build --pool pool.parquet --shard $i/4 -o out/s$i.parquet --run-dir out/s$i; done
  otcurate merge out/s0 out/s1 out/s2 out/s3 --run-dir out/run -o out/tasks.parquet --target 5000 --seed 1`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The stages a sharded build defers (select) run here.
			stages, err := filters.Build(filters.WholePoolStages(filters.StageNames()), filters.Options{Target: target, Seed: seed, StratifyBy: stratify})
			if err != nil {
				return usageErr(err)
			}
			var sets []pipeline.SetStage
			for _, st := range stages {
				set, ok := st.(pipeline.SetStage)
				if !ok {
					return fmt.Errorf("merge: stage %s is not a set stage", st.Name())
				}
				sets = append(sets, set)
			}
			for _, d := range args {
				rl, err := rundir.ReadLock(d) // no build may write a shard while it is merged
				if err != nil {
					return fmt.Errorf("merge: shard %w", err)
				}
				defer rl.Unlock()
			}
			// near_dup saw one shard at a time: near-copies in different
			// shards are resolved here, before select.
			if sum, err := rundir.ReadSummary(args[0]); err == nil && slices.Contains(sum.Stages, filters.StageNearDup) {
				sets = append([]pipeline.SetStage{filters.NearDupShards{RunDirs: args}}, sets...)
			}
			lock, err := lockRunDir(cmd, g.logger, runDir)
			if err != nil {
				return err
			}
			defer lock.Unlock()
			sum, _, err := pipeline.Merge(cmd.Context(), pipeline.MergeOptions{Layout: filters.Layout(),
				RunDirs: args, RunDir: runDir, Output: out, Shards: shards, Stages: sets, Logger: g.logger,
				Solutions: filters.SolutionStore,
			})
			return finishRun(cmd, g, sum, runDir, nil, err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&runDir, "run-dir", "", "run directory of the merged run")
	f.StringVarP(&out, "output", "o", "", "merged dataset (parquet; a folder of HF shards with --shards > 1)")
	f.IntVar(&shards, "shards", 1, "write the output as N HF-style shards")
	f.IntVar(&target, "target", 0, "select exactly N tasks over all shards (0 keeps all survivors)")
	f.Int64Var(&seed, "seed", 0, "seed of the selection")
	f.StringVar(&stratify, "stratify-by", "", "select: keep each value's share of this task.toml [metadata] key")
	_ = cmd.MarkFlagRequired("run-dir")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}
