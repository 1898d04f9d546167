package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/traces"
)

func newTracesCmd(g *globals) *cobra.Command {
	var (
		data, out, sandboxes string
		verifierMode         runnerFlags
		attempts, perTask    int
		minReward            float64
		pol                  policyOptions
	)
	cmd := &cobra.Command{
		Use:     "traces --data FILE -o SFT.parquet",
		GroupID: "curate",
		Short:   "Export a teacher policy's solved trajectories as an SFT dataset",
		Long: `traces runs a teacher policy (--policy openai for a served model, or the built-in one)
over a task set through the same terminus-2 harness and sandboxes as the difficulty stage and
the trainer, scores each attempt with the task's verifier, and writes the solved ones as a
parquet SFT dataset: one row per trajectory with task, conversations (a list of
{role, content}: the harness prompt, the model's replies and the terminal observations,
ending with the model's last reply), reward, agent, model, episode, turns and end.

Up to --attempts episodes run per task; attempts stop once --per-task trajectories scored at
least --min-reward. Infrastructure failures are counted, never exported.`,
		Example: `  otcurate traces --data out/tasks.parquet -o out/sft.parquet --policy openai \
      --base-url http://gpu:8000/v1 --model teacher --attempts 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := pol.build()
			if err != nil {
				return err
			}
			src, err := pool.Open(data)
			if err != nil {
				return err
			}
			runID := newRunID()
			backend, err := openSandbox(cmd, g, sandboxes, runID)
			if err != nil {
				return err
			}
			defer backend.Close()
			runner, err := newRunner(g, backend, verifierMode)
			if err != nil {
				return err
			}
			st, err := traces.Export(cmd.Context(), traces.Options{
				Source: src, Runner: runner, Policy: p,
				Harness: pol.harnessConfig(), Limits: g.limits(), Labels: map[string]string{sandbox.LabelRun: runID},
				Output: out, Attempts: attempts, PerTask: perTask, MinReward: minReward, Workers: g.workers, Logger: g.logger,
			})
			b, _ := json.Marshal(st)
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d trajectories of %d tasks to %s\n", st.Exported, st.TasksWithRow, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", "", "task set (parquet, shards or task directories)")
	f.StringVarP(&out, "output", "o", "", "SFT dataset to write: JSON Lines when the name ends in .jsonl, parquet otherwise")
	f.IntVar(&attempts, "attempts", 4, "episodes per task at most")
	f.IntVar(&perTask, "per-task", 1, "solved trajectories to keep per task")
	f.Float64Var(&minReward, "min-reward", 1, "reward a trajectory needs to be exported")
	addSandboxFlag(f, &sandboxes)
	addVerifierSandboxFlag(f, &verifierMode)
	pol.addFlags(f, 0.7)
	_ = cmd.MarkFlagRequired("data")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}
