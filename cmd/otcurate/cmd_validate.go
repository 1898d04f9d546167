package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/reports"
)

func newValidateCmd(g *globals) *cobra.Command {
	var poolSpec, runDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "validate --pool POOL",
		GroupID: "curate",
		Short:   "Check every task of a pool and explain each broken one",
		Long: `validate decodes every bundle safely and checks it is a usable Harbor task. Each
invalid row is printed with its reason code. Exit code 3 when any row is invalid.`,
		Example: `  otcurate validate --pool testdata/sample-pool.parquet
  otcurate validate --pool tasks/ --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := pool.Open(poolSpec)
			if err != nil {
				return err
			}
			if runDir != "" {
				lock, err := lockRunDir(cmd, g.logger, runDir)
				if err != nil {
					return err
				}
				defer lock.Unlock()
			}
			stages, err := filters.Build([]string{filters.StageValidate}, filters.Options{Limits: g.limits()})
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			progress, logger, wait := g.newProgress(ctx, cmd.ErrOrStderr())
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			sum, _, err := pipeline.Build(ctx, pipeline.BuildOptions{
				Source: src, Stages: stages, RunDir: runDir, Workers: g.workers, Limits: g.limits(),
				Logger: logger, Progress: progress,
				OnDecision: func(d pipeline.Decision) {
					switch {
					case asJSON:
						_ = enc.Encode(d)
					case d.Verdict != pipeline.Keep:
						fmt.Fprintf(out, "%s\t%s\t%s\t%s\n", d.Verdict, d.Path, d.Reason, d.Detail)
					}
				},
			})
			wait()
			if err != nil {
				return err
			}
			if !asJSON {
				reports.WriteSummary(out, sum)
			}
			if bad := sum.TasksIn - sum.TasksKept; bad > 0 {
				return &exitError{code: exitItemFailure, err: fmt.Errorf("%d of %d tasks are invalid", bad, sum.TasksIn)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&poolSpec, "pool", "", "task pool (parquet file, glob, folder of shards or of task directories)")
	cmd.Flags().StringVar(&runDir, "run-dir", "", "also write decisions.jsonl and summary.json here")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print every decision as a JSON line")
	_ = cmd.MarkFlagRequired("pool")
	return cmd
}
