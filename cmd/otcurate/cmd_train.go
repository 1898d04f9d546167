package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/policy/builtin"
	"github.com/otcurate/otcurate/policy/openai"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/reports"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/train"
)

type trainOptions struct {
	data, eval, runDir, sandboxes             string
	runner                                    runnerFlags // --verifier-sandbox MODE, --max-agent-sec
	groupSize, batchTasks, steps              int
	minGroup, evalEvery, epochs               int
	rollouts, lrDecaySteps                    int
	skipSolved                                int
	lr, clip, gradClip, entropy, entropyFloor float64
	optimizer, entropyGroups                  string
	resume, shuffleRewards, skipEvalBefore    bool
	tests                                     []string // NAME=PATH
	learnerDir                                string
	learnerTimeout                            time.Duration
	pol                                       policyOptions
}

func newTrainCmd(g *globals) *cobra.Command {
	o := &trainOptions{}
	cmd := &cobra.Command{
		Use:     "train --data FILE --run-dir DIR",
		GroupID: "curate",
		Short:   "RLOO (rloo_n) on a curated set, in sandboxes, scored by the verifiers",
		Long: `train runs on-policy RLOO on a task set. Each step samples --batch-tasks tasks (seeded
epochs without replacement), rolls out --group-size attempts per task through the terminus-2
harness in fresh sandboxes, scores them with the task's verifier, computes rloo_n advantages
(leave-one-out baseline over the group; infrastructure failures and broken tasks excluded
from the baseline with advantage 0; zero-variance groups and groups with fewer than
--min-group usable samples get 0; truncated episodes — turn cap, agent timeout, context —
keep the verifier's reward, the reference recipe's "passthrough") and updates the policy.

--policy builtin updates the built-in policy in process (action-mean PPO-clip loss,
--ppo-epochs passes, a checkpoint every step). --policy openai writes each step's experience
for an external learner and waits for it to publish the next policy version (see
integrations/learner/README.md).

RUN_DIR gets metrics.jsonl (one line per step: rewards, signal, timings, the learning rate
applied and each group's task with its scored and passed attempts), eval.jsonl (greedy held-out pass rate before,
every --eval-every steps and after, with --eval), test-NAME.jsonl (the same, before and after
only, for each --test NAME=PATH split), checkpoints/, state.json and report.html.
--shuffle-rewards is a control arm: the learner gets the same rollouts with their rewards
permuted across the step (seeded), so any gain it shows did not come from the verifier.
--resume continues an interrupted run from its last checkpoint; with the built-in policy and
the same seed, the following steps' results are those of an uninterrupted run.`,
		Example: `  otcurate train --data out/rl.parquet --eval out/heldout.parquet --run-dir out/train \
      --group-size 8 --batch-tasks 8 --steps 14 --lr 15 --ppo-epochs 4 --seed 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runTrain(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "task set to train on (parquet, shards or task directories)")
	f.StringVar(&o.eval, "eval", "", "held-out task set for greedy evaluation")
	f.StringVar(&o.runDir, "run-dir", "", "run directory")
	f.IntVar(&o.groupSize, "group-size", 8, "attempts per task (K)")
	f.IntVar(&o.batchTasks, "batch-tasks", 8, "tasks per step (B)")
	f.IntVar(&o.steps, "steps", 10, "steps (S)")
	f.IntVar(&o.minGroup, "min-group", 0, "rloo_n minimum usable group size (default min(4, K))")
	f.IntVar(&o.skipSolved, "skip-solved", 0, "a task whose whole group passed sits out the next N epochs of the draw (its next group would teach nothing; 0 = plain seeded epochs)")
	f.IntVar(&o.rollouts, "rollouts", 8, "rollouts (sandboxes) in flight at once")
	f.IntVar(&o.evalEvery, "eval-every", 0, "also evaluate every N steps")
	f.IntVar(&o.epochs, "ppo-epochs", 4, "passes over each batch (built-in policy; the PPO clip bounds the drift)")
	f.Float64Var(&o.lr, "lr", 15, "learning rate (0 = the control arm: roll out and score, never change the policy)")
	f.IntVar(&o.lrDecaySteps, "lr-decay-steps", 0, "built-in policy: decay the learning rate linearly over the last N steps (0 = constant)")
	f.Float64Var(&o.clip, "clip", 0.2, "PPO clip ε")
	f.Float64Var(&o.gradClip, "grad-clip", 0, "max gradient norm (0 = none)")
	f.Float64Var(&o.entropy, "entropy-coef", 0, "built-in policy: entropy bonus β (keeps a confident policy sampling alternatives; 0 = none)")
	f.Float64Var(&o.entropyFloor, "entropy-floor", 0, "built-in policy: the bonus acts only on decisions whose entropy is below this share of its maximum, 0-1 (0 = every decision)")
	f.StringVar(&o.entropyGroups, "entropy-groups", "all", "built-in policy: which groups' turns the entropy bonus acts on: all, or failed (groups where no attempt passed)")
	f.StringVar(&o.optimizer, "optimizer", "sgd", "built-in policy: sgd (lr·gradient) or adagrad (each weight's step scaled by its gradient history; use an lr near 0.5)")
	f.BoolVar(&o.shuffleRewards, "shuffle-rewards", false, "control arm: permute the scored rewards across each step's samples (seeded by --seed and the step) before the advantages; metrics keep the true rewards")
	f.BoolVar(&o.skipEvalBefore, "skip-eval-before", false, "leave out the --eval and --test evaluations before step 1 (greedy: they depend only on the starting weights, so another run's serve)")
	f.StringArrayVar(&o.tests, "test", nil, "NAME=PATH: a test split evaluated greedily before the first step and after the last only, to RUN_DIR/test-NAME.jsonl (repeatable)")
	f.BoolVar(&o.resume, "resume", false, "continue the run in --run-dir from its last checkpoint")
	f.StringVar(&o.learnerDir, "learner-dir", "", "openai policy: directory shared with the external learner (default RUN_DIR/learner)")
	f.DurationVar(&o.learnerTimeout, "learner-timeout", 2*time.Hour, "openai policy: how long to wait for the learner's next version")
	addSandboxFlag(f, &o.sandboxes)
	addVerifierSandboxFlag(f, &o.runner)
	o.pol.addFlags(f, 1)
	f.Int64Var(&o.pol.seed, "seed", 1, "seed of task sampling and of the policy's draws (same as --policy-seed)")
	_ = cmd.MarkFlagRequired("data")
	_ = cmd.MarkFlagRequired("run-dir")
	return cmd
}

func runTrain(cmd *cobra.Command, g *globals, o *trainOptions) error {
	if o.pol.temperature <= 0 {
		return usageErr(fmt.Errorf("train samples: --temperature must be > 0"))
	}
	p, err := o.pol.build()
	if err != nil {
		return err
	}
	var learner train.Learner
	switch bp := p.(type) {
	case *builtin.Policy:
		if o.entropyFloor < 0 || o.entropyFloor > 1 {
			return usageErr(fmt.Errorf("--entropy-floor must be between 0 and 1, not %g", o.entropyFloor))
		}
		if o.entropyGroups != "all" && o.entropyGroups != "failed" {
			return usageErr(fmt.Errorf("--entropy-groups must be all or failed, not %q", o.entropyGroups))
		}
		if o.optimizer != "sgd" && o.optimizer != "adagrad" {
			return usageErr(fmt.Errorf("--optimizer must be sgd or adagrad, not %q", o.optimizer))
		}
		learner = &train.Builtin{Policy: bp, LR: o.lr, Clip: o.clip, Epochs: o.epochs, Temperature: o.pol.temperature,
			GradClip: o.gradClip, AdaGrad: o.optimizer == "adagrad", EntropyCoef: o.entropy,
			EntropyFailedOnly: o.entropyGroups == "failed", EntropyFloor: o.entropyFloor,
			DecaySteps: o.lrDecaySteps, TotalSteps: o.steps}
	case *openai.Client:
		dir := o.learnerDir
		if dir == "" {
			dir = filepath.Join(o.runDir, "learner")
		}
		learner = &train.External{Dir: dir, Policy: bp, Model: o.pol.model, Timeout: o.learnerTimeout}
	default:
		return usageErr(fmt.Errorf("--policy %s cannot be trained", o.pol.kind))
	}
	data, err := pool.Open(o.data)
	if err != nil {
		return err
	}
	var eval pool.Source
	if o.eval != "" {
		if eval, err = pool.Open(o.eval); err != nil {
			return err
		}
	}
	tests, err := openTestSplits(o.tests)
	if err != nil {
		return err
	}
	lock, err := lockRunDir(cmd, g.logger, o.runDir)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	runID := newRunID()
	backend, err := openSandbox(cmd, g, o.sandboxes, runID)
	if err != nil {
		return err
	}
	defer backend.Close()
	runner, err := newRunner(g, backend, o.runner)
	if err != nil {
		return err
	}
	id, err := o.pol.identity()
	if err != nil {
		return err
	}
	fp := fmt.Sprintf("train/v1 data=%s policy=%s K=%d B=%d seed=%d lr=%g clip=%g epochs=%d T=%g turns=%d min_group=%d",
		filepath.Base(o.data), id, o.groupSize, o.batchTasks, o.pol.seed, o.lr, o.clip, o.epochs, o.pol.temperature, o.pol.maxTurns, o.minGroup)
	if o.lrDecaySteps > 0 { // the schedule depends on the run's length: a resume must keep both
		fp += fmt.Sprintf(" lr_decay=%d/%d", o.lrDecaySteps, o.steps)
	}
	if o.entropy != 0 {
		fp += fmt.Sprintf(" entropy=%g/%s/%g", o.entropy, o.entropyGroups, o.entropyFloor)
	}
	if o.skipSolved > 0 {
		fp += fmt.Sprintf(" skip_solved=%d", o.skipSolved)
	}
	if o.shuffleRewards {
		fp += " shuffle_rewards"
	}
	fp += runner.SettingsKey() // verdicts of one verifier mode are not the other's
	_, err = train.Run(cmd.Context(), train.Options{
		Data: data, Eval: eval, Runner: runner,
		Labels: map[string]string{sandbox.LabelRun: runID}, Limits: g.limits(), Policy: p, Learner: learner,
		Harness: o.pol.harnessConfig(), GroupSize: o.groupSize, BatchTasks: o.batchTasks, Steps: o.steps,
		Seed: o.pol.seed, MinGroup: o.minGroup, SkipSolved: o.skipSolved, EvalEvery: o.evalEvery, Workers: o.rollouts, RunDir: o.runDir,
		Resume: o.resume, Logger: g.logger, Fingerprint: fp, ShuffleRewards: o.shuffleRewards, Tests: tests,
		SkipEvalBefore: o.skipEvalBefore,
	})
	if rerr := reports.WriteTrainReport(o.runDir); rerr != nil {
		g.logger.Warn("cannot write the training report", "err", rerr)
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", filepath.Join(o.runDir, "report.html"))
	}
	if err != nil {
		return err
	}
	_, err = os.Stat(filepath.Join(o.runDir, "metrics.jsonl"))
	return err
}

// openTestSplits opens the --test NAME=PATH splits; names must be distinct
// and usable in a file name.
func openTestSplits(specs []string) ([]train.EvalSet, error) {
	var out []train.EvalSet
	seen := map[string]bool{}
	for _, spec := range specs {
		name, path, ok := strings.Cut(spec, "=")
		if !ok || name == "" || path == "" || strings.ContainsAny(name, `/\ `) {
			return nil, usageErr(fmt.Errorf("--test wants NAME=PATH (a name without / or spaces), not %q", spec))
		}
		if seen[name] {
			return nil, usageErr(fmt.Errorf("--test %s given twice", name))
		}
		seen[name] = true
		src, err := pool.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--test %s: %w", name, err)
		}
		out = append(out, train.EvalSet{Name: name, Source: src})
	}
	return out, nil
}
