package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/trial"
)

// newRunID names the resources of one otcurate process.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

func newRunCmd(g *globals) *cobra.Command {
	var (
		agentName string
		repeats   int
		asJSON    bool
		isolate   bool
		network   bool
		sandboxes string
		runID     string
		trajFile  string
		pol       policyOptions
	)
	var verifierMode runnerFlags // --verifier-sandbox, --max-agent-sec
	cmd := &cobra.Command{
		Use:     "run TASK",
		GroupID: "curate",
		Short:   "Run one task with an agent and score it",
		Long: `run builds the task's environment, runs the agent (oracle: solution/solve.sh; nop:
nothing; policy: the terminus-2 harness driven by --policy) and scores it with the task's
verifier, as Harbor does. TASK is a task directory or POOL#path (a row of a dataset).

Repeated verifier runs share one post-solution sandbox unless --isolate.
Exit code 0 only when every repeat passed (scored, reward ≥ 1); 3 otherwise.`,
		Example: `  otcurate run testdata/harbor-examples/hello-user --agent oracle
  otcurate run pool.parquet#task-00042 --agent nop --repeats 3 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var actor *agent.Harness
			switch agentName {
			case string(trial.Oracle), string(trial.Nop):
			case "policy":
				p, err := pol.build()
				if err != nil {
					return err
				}
				actor = &agent.Harness{Policy: p, Config: pol.harnessConfig()}
			default:
				return usageErr(fmt.Errorf("--agent must be oracle, nop or policy"))
			}
			ctx := cmd.Context()
			t, err := loadTaskSpec(cmd, g, args[0])
			if err != nil {
				return err
			}
			if runID == "" {
				runID = newRunID()
			}
			backend, err := openSandbox(cmd, g, sandboxes, runID)
			if err != nil {
				return err
			}
			defer backend.Close()
			runner, err := newRunner(g, backend, verifierMode)
			if err != nil {
				return err
			}
			opts := trial.Options{Agent: trial.Agent(agentName), Repeats: repeats,
				Isolate: isolate, AllowNetwork: network, Labels: map[string]string{sandbox.LabelRun: runID}}
			if actor != nil {
				opts.Actor = actor
			}
			results, err := runner.Run(ctx, t, opts)
			if err != nil {
				return err
			}
			if trajFile != "" {
				if err := writeTrajectories(trajFile, results); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(results); err != nil {
					return err
				}
			} else {
				printResults(out, results)
			}
			for _, r := range results {
				if !r.Passed() {
					return &exitError{code: exitItemFailure, err: fmt.Errorf("not every repeat passed")}
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&agentName, "agent", "oracle", "oracle, nop or policy (the harness with --policy)")
	f.StringVar(&trajFile, "trajectory", "", "write the policy's trajectories (JSON lines) to this file")
	pol.addFlags(f, 1)
	f.IntVar(&repeats, "repeats", 1, "verifier runs")
	f.BoolVar(&isolate, "isolate", false, "a fresh sandbox (and agent run) per repeat")
	f.BoolVar(&network, "allow-network", false, "give the sandbox network when the task asks for it (offline by default)")
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	addSandboxFlag(f, &sandboxes)
	addVerifierSandboxFlag(f, &verifierMode)
	f.StringVar(&runID, "run-id", "", "label the run's sandboxes with this id (default: time and random)")
	_ = cmd.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions([]string{"oracle", "nop", "policy"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// loadTaskSpec reads a task directory or POOL#path.
func loadTaskSpec(cmd *cobra.Command, g *globals, spec string) (*trial.Task, error) {
	var src pool.Source
	var path string
	if poolSpec, p, ok := strings.Cut(spec, "#"); ok {
		s, err := pool.Open(poolSpec)
		if err != nil {
			return nil, err
		}
		src, path = s, p
	} else {
		st, err := os.Stat(spec)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, usageErr(fmt.Errorf("%s: give a task directory or POOL#path", spec))
		}
		s, err := pool.OpenTaskDirs(spec)
		if err != nil {
			return nil, err
		}
		if s.Len() != 1 {
			return nil, usageErr(fmt.Errorf("%s holds %d tasks; name one", spec, s.Len()))
		}
		src, path = s, s.Paths()[0]
	}
	rec, err := pool.Find(cmd.Context(), src, path)
	if err != nil {
		return nil, err
	}
	if rec.Err != nil {
		return nil, rec.Err
	}
	return trial.LoadTask(rec.Path, rec.Blob, g.limits())
}

// writeTrajectories writes each result's trajectory as a JSON line.
func writeTrajectories(path string, results []trial.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, r := range results {
		if tr, ok := r.Trajectory.(*agent.Trajectory); ok {
			if err := enc.Encode(tr); err != nil {
				f.Close()
				return err
			}
		}
	}
	return f.Close()
}

func printResults(w io.Writer, results []trial.Result) {
	for _, r := range results {
		reward := "-"
		if r.Reward != nil {
			reward = fmt.Sprint(*r.Reward)
		}
		d := r.Durations
		fmt.Fprintf(w, "%s  agent=%s repeat=%d  outcome=%s reward=%s  build=%.1fs start=%.1fs solve=%.1fs verify=%.1fs teardown=%.1fs\n",
			r.Task, r.Agent, r.Repeat, r.Outcome, reward, d.Build, d.Start, d.Solve, d.Verify, d.Teardown)
		if r.Detail != "" {
			fmt.Fprintf(w, "  %s\n", r.Detail)
		}
		for _, warn := range r.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", warn)
		}
	}
}
