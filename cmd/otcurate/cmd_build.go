package main

import (
	"fmt"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/reports"
	"github.com/otcurate/otcurate/rundir"
	"github.com/otcurate/otcurate/sandbox"
)

type buildOptions struct {
	pool      string
	out       string
	runDir    string
	stages    string
	target    int
	seed      int64
	shards    int
	lint      string
	repeats   int
	gate      gateOptions
	sandboxes string      // --sandbox SPEC: where sandboxes run
	runner    runnerFlags // --verifier-sandbox MODE, --max-agent-sec
	network   bool        // --allow-network

	stratify   string
	maxBuild   time.Duration
	envRepeats int
	shard      string
	runID      string
	pol        policyOptions
	attempts   int
	rule       string
	band       string
	exhaustive bool

	proveAttempts, proveReverify, proveReplays int
	nearDup                                    float64
	against                                    []string
	ngram                                      int
	ratio                                      float64
}

func (o *buildOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.pool, "pool", "", "task pool: parquet file, glob or folder of shards, or folder of task directories")
	f.StringVarP(&o.out, "output", "o", "", "output dataset (parquet; a folder of HF shards with --shards > 1)")
	f.StringVar(&o.runDir, "run-dir", "", "run directory for decisions.jsonl and summary.json")
	f.StringVar(&o.stages, "stages", strings.Join(filters.DefaultStageList(false), ","), "comma-separated stages to run, in order, of "+strings.Join(filters.StageNames(), ", ")+
		" ("+strings.Join(withPolicyStages(), ",")+" joins the default when --policy is given)")
	f.IntVar(&o.target, "target", 0, "select exactly N tasks (all survivors when fewer; 0 keeps all)")
	f.Int64Var(&o.seed, "seed", 0, "seed of the selection")
	f.StringVar(&o.stratify, "stratify-by", "", "select: keep each value's share of this task.toml [metadata] key (e.g. category)")
	f.StringVar(&o.runID, "run-id", "", "label this run's sandboxes with this id (default: time and random)")
	f.StringVar(&o.shard, "shard", "", "process only shard I/N of the pool (by content hash; select is deferred to `otcurate merge`)")
	f.IntVar(&o.shards, "shards", 1, "write the output as N HF-style shards (train-0000i-of-0000N.parquet)")
	f.DurationVar(&o.maxBuild, "env-max-build", filters.DefaultMaxBuild, "env stage: builds slower than this are cut off and dropped as environment_slow_build")
	f.IntVar(&o.envRepeats, "env-repeats", 1, "env stage: measurements per unique environment (the later ones rebuilt without cache); any disagreement drops it as environment_unstable")
	f.IntVar(&o.repeats, "flaky-repeats", 9, "flaky stage: oracle verifier runs per task (stops at the first disagreement)")
	o.gate.addFlags(f)
	addSandboxFlag(f, &o.sandboxes)
	addVerifierSandboxFlag(f, &o.runner)
	f.BoolVar(&o.network, "allow-network", false, "give sandboxes the network their task asks for (task.toml network_mode; offline by default): "+
		"lint then only reports a verifier that downloads (verifier_downloads) instead of dropping it (verifier_uses_network)")
	f.IntVar(&o.attempts, "difficulty-attempts", 8, "difficulty stage: attempts per task (k)")
	f.StringVar(&o.rule, "difficulty-rule", filters.RuleSolvable, "difficulty stage keep rule: solvable (pass@k > 0, the reference rule) or band")
	f.StringVar(&o.band, "difficulty-band", "0,1", "band rule: keep pass rates strictly between LO,HI")
	f.BoolVar(&o.exhaustive, "difficulty-exhaustive", false, "run all k attempts even once the verdict is known (full pass-rate estimates)")
	f.IntVar(&o.proveAttempts, "prove-attempts", filters.DefaultProveAttempts, "flaky stage, tasks without a solution, with --policy: policy attempts until the first pass")
	f.IntVar(&o.proveReverify, "prove-reverify", filters.DefaultProveReverify, "flaky stage prover: verifier re-runs on the passing attempt's state (any disagreement: flaky_verifier)")
	f.IntVar(&o.proveReplays, "prove-replays", filters.DefaultProveReplays, "flaky stage prover: replays of the passing keystrokes into fresh sandboxes (a failing one: flaky_solution_or_environment)")
	o.pol.addFlags(f, 1)
	f.Float64Var(&o.nearDup, "near-dup-threshold", filters.DefaultNearDupThreshold, "near_dup: drop a task whose instruction reaches this Jaccard similarity (4-word shingles) with an earlier task's, and its tests half of it")
	f.StringArrayVar(&o.against, "against", nil, "decontam: a benchmark pool (parquet or folder of task directories) to decontaminate against; repeatable; adds decontam to the default stages")
	f.IntVar(&o.ngram, "decontam-ngram", filters.DefaultDecontamN, "decontam: drop a task whose instruction shares an n-gram of this many normalised words with a benchmark task's")
	f.Float64Var(&o.ratio, "decontam-ratio", filters.DefaultDecontamRatio, "decontam: drop a task whose instruction's Indel ratio (fuzz.ratio, on normalised words) to a benchmark task's reaches this")
	f.StringVar(&o.lint, "lint", "", "lint check actions, e.g. \"oversized_file=drop,no_solution=drop\" (each check: drop, warn or off)")
}

func newBuildCmd(g *globals) *cobra.Command {
	o := &buildOptions{}
	cmd := &cobra.Command{
		Use:     "build --pool POOL -o OUT --run-dir DIR",
		GroupID: "curate",
		Short:   "Curate a pool into a dataset, explaining every dropped task",
		Long: `build streams a pool through the curation stages and writes the kept tasks, in pool
order, as a dataset in the reference format (path, task_binary).

The run directory receives decisions.jsonl (one line per task and stage: path, stage,
verdict keep|drop|error, reason, detail) and summary.json (the funnel).

Stages, in their default order:
` + filters.StagesHelp() + `
The default list is ` + strings.Join(filters.DefaultStageList(false), ",") + `; ` + strings.Join(withPolicyStages(), ",") + ` joins
when a policy is named (--policy). Sandbox stages run tasks in sandboxes. For a quick
static pass with no engine: --stages ` + strings.Join(filters.StaticStages(), ",") + `. ` + filters.StageValidate + ` always runs first.

difficulty runs --difficulty-attempts episodes of a policy (--policy builtin|openai) per
task through the terminus-2 harness and keeps tasks by pass rate: the reference rule drops
what is never solved; --difficulty-rule band keeps LO < rate < HI (RL groups with variance).
It stops as soon as the verdict cannot change, unless --difficulty-exhaustive.

With --policy, flaky proves a task that has no solution/ with the policy: attempts until the
first pass (--prove-attempts), the verifier re-run on that state (--prove-reverify; a
disagreement drops flaky_verifier), the keystrokes replayed into fresh sandboxes
(--prove-replays; a failing replay drops flaky_solution_or_environment). A proven task's
trajectory and a solve.sh rendered from it (kept only if it passes as an oracle) go to
RUN_DIR/solutions/<sha256 of task_binary>/; difficulty reuses the proof's attempts.

env builds, starts and tears down each unique environment once and drops build failures,
unhealthy or slow environments. flaky is the verifier gate. Negative side, always: the
untouched environment must score 0 in every one of --nop-repeats verifier runs over
--nop-sessions fresh sandboxes (5 over 2: a verifier passing it half of the time is caught
97% of the time as flaky_verifier or nop_passes). Positive side: the oracle
(solution/solve.sh), else a supplied solution (a solution_binary column in the pool, a
gzip tar of solution/ or of solve.sh and its files; --solutions DIR with
DIR/<task path>/solution/; RUN_DIR/solutions/<sha256 of task_binary>/solution/) must score
1 in every one of --flaky-repeats runs over two fresh sandboxes (stopping at the first
disagreement); every run under 20 s. A task with no positive evidence is kept as
verifier_unproven (manifest proof=none), or dropped as unproven with --require-proof; the
manifest's proof column says oracle, supplied, policy or none. The output keeps the
reference shape (path, task_binary) and the pool's bytes; --attach-solutions adds the
supplied or discovered solution that proved a kept task as solution/ inside its
task_binary (tasks that ship none; every other bundle unchanged).

lint checks (reason codes; default action): tests_in_image (drop: test.sh, the files it
runs or an expected-output file is byte-identical to a file the Dockerfile copies into the
image), solution_in_image (drop: solve.sh, a file it names or all solution code in the image),
shared_project_tests and shared_solution_files (warn: other verifier or solution files also in
the image, by design), dockerfile_unparsable, copy_outside_context, copy_source_missing (warn: Docker fails
such builds; the env stage reports them), verifier_writes_no_reward (drop),
reward_outside_verifier_logs (warn: the only reward paths named are outside /logs/verifier),
verifier_uses_network (drop: test.sh fetches from the network, and the task says
no-network or the run is offline; a curl of localhost does not count), verifier_downloads
(warn: it fetches, and --allow-network gives the task the network it allows),
instruction_reveals_tests (drop: every expected output the
tests compare against is shown), instruction_shows_test_values (warn: most shown, some
hidden), no_solution (warn: RL pools ship no solutions and the verifier gate has an
oracle-free path; --lint no_solution=drop to drop), oversized_file (warn). Warnings keep the
task and are listed in the decision's flags and the funnel's flagged_by_reason.

near_dup drops a task whose instruction (Jaccard ≥ --near-dup-threshold on 4-word
shingles of normalised text: case, line breaks and numbers ignored) and tests/ text (≥ half
of it) are near-identical to an earlier task's in pool order, naming it; shingles in more than
5% of the pool's tasks (and more than 50) are its template and are ignored. A sharded run sees its
shard only and saves its sketches; merge resolves pairs across shards (near_dup_shards). decontam (with --against POOL_OR_DIR, repeatable) drops tasks whose
instruction shares a --decontam-ngram-word n-gram with a benchmark task's or reaches
--decontam-ratio Indel similarity to it, quoting the overlap.`,
		Example: `  otcurate build --pool testdata/sample-pool.parquet -o out/tasks.parquet --run-dir out/run
  otcurate build --pool data/ -o out/rl.parquet --run-dir out/run --target 5000 --seed 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBuild(cmd, g, o)
		},
	}
	o.AddFlags(cmd.Flags())
	_ = cmd.MarkFlagRequired("pool")
	_ = cmd.MarkFlagRequired("output")
	_ = cmd.MarkFlagRequired("run-dir")
	return cmd
}

func runBuild(cmd *cobra.Command, g *globals, o *buildOptions) error {
	list := o.stages
	if !cmd.Flags().Changed("stages") {
		def := filters.DefaultStageList(cmd.Flags().Changed("policy"))
		if len(o.against) > 0 {
			def = filters.AddAgainstStages(def)
		}
		list = strings.Join(def, ",")
	}
	names, err := filters.ParseStages(list)
	if err != nil {
		return usageErr(err)
	}
	var shard pipeline.Shard
	if o.shard != "" {
		if shard, err = rundir.ParseShard(o.shard); err != nil {
			return usageErr(err)
		}
		if deferred := filters.WholePoolStages(names); shard.Enabled() && len(deferred) > 0 {
			// Selection needs every shard's survivors: merge runs it.
			names = slices.DeleteFunc(names, func(n string) bool { return slices.Contains(deferred, n) })
			g.logger.Info("sharded run: stages deferred to `otcurate merge`", "stages", deferred, "shard", shard.String())
		}
	}
	if o.target < 0 || o.shards < 1 {
		return usageErr(fmt.Errorf("--target must be ≥ 0 and --shards ≥ 1"))
	}
	lint, err := filters.ParseLintActions(o.lint)
	if err != nil {
		return usageErr(err)
	}
	fopts := filters.Options{Limits: g.limits(), Target: o.target, Seed: o.seed, Lint: lint, FlakyRepeats: o.repeats, StratifyBy: o.stratify, EnvMaxBuild: o.maxBuild, EnvRepeats: o.envRepeats,
		NearDupThreshold: o.nearDup, Decontam: filters.DecontamOptions{Against: o.against, N: o.ngram, Ratio: o.ratio, Limits: g.limits()},
		AllowNetwork: o.network}
	if shard.Enabled() {
		fopts.NearDupSketchDir = o.runDir // merge finds near-duplicates across shards from them
	}
	if len(o.against) > 0 && !slices.Contains(names, filters.StageDecontam) {
		return usageErr(fmt.Errorf("--against is given but the stage list (%s) has no decontam", strings.Join(names, ",")))
	}
	solutionKeys, err := o.gate.apply(&fopts, o.runDir)
	if err != nil {
		return err
	}
	if slices.Contains(names, filters.StageDifficulty) {
		if fopts.Difficulty, err = o.difficulty(); err != nil {
			return err
		}
		if err := fopts.Difficulty.Validate(); err != nil {
			return usageErr(err) // before any sandbox starts
		}
	}
	proveSet := cmd.Flags().Changed("prove-attempts") || cmd.Flags().Changed("prove-reverify") || cmd.Flags().Changed("prove-replays")
	if proveSet && !(cmd.Flags().Changed("policy") && slices.Contains(names, filters.StageFlaky)) {
		return usageErr(fmt.Errorf("--prove-attempts, --prove-reverify and --prove-replays configure the flaky stage's policy prover: they need --policy and the flaky stage"))
	}
	if cmd.Flags().Changed("policy") && slices.Contains(names, filters.StageFlaky) {
		if fopts.Prover, err = o.prover(fopts.Difficulty, slices.Contains(names, filters.StageDifficulty)); err != nil {
			return err
		}
		if fopts.Prover.Log != nil {
			fopts.Difficulty.Prior = fopts.Prover.Log
		}
	}
	attach, err := o.gate.attacher(fopts, names)
	if err != nil {
		return err
	}
	lock, err := lockRunDir(cmd, g.logger, o.runDir)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if filters.NeedsSandbox(names) {
		runID := o.runID
		if runID == "" {
			runID = newRunID()
		}
		backend, err := openSandbox(cmd, g, o.sandboxes, runID)
		if err != nil {
			return fmt.Errorf("stages %s run tasks in sandboxes: %w (start the engine with `make setup`, or run the static stages only: --stages %s)",
				strings.Join(filters.SandboxStages(names), ","), err, strings.Join(filters.StaticStages(), ","))
		}
		defer backend.Close()
		if fopts.Runner, err = newRunner(g, backend, o.runner); err != nil {
			return err
		}
		fopts.Runner.AllowNetwork = o.network
		fopts.Labels = map[string]string{sandbox.LabelRun: runID}
	}
	stages, err := filters.Build(names, fopts)
	if err != nil {
		return usageErr(err)
	}
	src, err := pool.Open(o.pool)
	if err != nil {
		return err
	}
	g.fitMemoryLimit(src.Len())
	ctx := cmd.Context()
	progress, logger, wait := g.newProgress(ctx, cmd.ErrOrStderr())
	logger.Info("build", "pool", src.String(), "tasks", src.Len(), "stages", names, "workers", g.workers)
	var report *reports.PendingReport
	sum, _, err := pipeline.Build(ctx, pipeline.BuildOptions{
		Source: src, Stages: stages, Output: o.out, Shards: o.shards, RunDir: o.runDir,
		Workers: g.workers, Limits: g.limits(), Logger: logger, Progress: progress, Shard: shard, Attach: attacherOrNil(attach),
		AfterStages: func(res *pipeline.Result) {
			report = reports.StartBuildReport(o.runDir, reports.EnvHashesOf(res.Tasks))
			warnUnknownSolutions(logger, o.gate.solutions, solutionKeys, res.Tasks)
		},
	})
	wait()
	if err == nil {
		reportAttached(cmd.OutOrStdout(), g.logger, attach)
	}
	return finishRun(cmd, g, sum, o.runDir, report, err)
}

// attacherOrNil keeps a nil *SolutionAttacher from becoming a non-nil
// pipeline.Attacher.
func attacherOrNil(a *filters.SolutionAttacher) pipeline.Attacher {
	if a == nil {
		return nil
	}
	return a
}

// finishRun ends a build, filter or merge: the funnel on stdout, the
// report, and exit code 3 when some tasks could not be decided. report
// holds the report's decisions when a build started reading them early;
// nil builds the report from the run directory alone.
func finishRun(cmd *cobra.Command, g *globals, sum *pipeline.Summary, runDir string, report *reports.PendingReport, runErr error) error {
	if sum != nil {
		reports.WriteSummary(cmd.OutOrStdout(), sum)
		region := trace.StartRegion(cmd.Context(), "report")
		var rerr error
		if report != nil {
			rerr = report.Finish()
		} else {
			rerr = reports.WriteBuildReport(runDir)
		}
		region.End()
		if rerr != nil {
			g.logger.Warn("cannot write the run report", "err", rerr)
		} else {
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s\n", filepath.Join(runDir, reports.ReportFile))
		}
	}
	if runErr != nil {
		return runErr
	}
	if sum.Errors > 0 {
		return &exitError{code: exitItemFailure, err: fmt.Errorf("%d tasks could not be decided (verdict error in %s)", sum.Errors, filepath.Join(runDir, rundir.DecisionsFile))}
	}
	return nil
}

// difficulty builds the difficulty stage's configuration from the flags.
func (o *buildOptions) difficulty() (filters.Difficulty, error) {
	p, err := o.pol.build()
	if err != nil {
		return filters.Difficulty{}, err
	}
	var lo, hi float64
	if _, err := fmt.Sscanf(o.band, "%g,%g", &lo, &hi); err != nil {
		return filters.Difficulty{}, usageErr(fmt.Errorf("--difficulty-band %q: want LO,HI", o.band))
	}
	id, err := o.pol.identity()
	if err != nil {
		return filters.Difficulty{}, err
	}
	return filters.Difficulty{Policy: p, PolicyID: id, Harness: o.pol.harnessConfig(), Attempts: o.attempts,
		Rule: o.rule, Lo: lo, Hi: hi, Exhaustive: o.exhaustive}, nil
}

// prover builds the flaky stage's policy prover from the flags. With the
// difficulty stage in the run it shares that stage's policy and hands it
// its attempts.
func (o *buildOptions) prover(diff filters.Difficulty, withDifficulty bool) (*filters.PolicyProver, error) {
	if o.proveAttempts < 1 || o.proveReverify < 0 || o.proveReplays < 1 {
		return nil, usageErr(fmt.Errorf("--prove-attempts and --prove-replays must be ≥ 1, --prove-reverify ≥ 0"))
	}
	p := &filters.PolicyProver{Attempts: o.proveAttempts, Reverify: o.proveReverify, Replays: o.proveReplays,
		SolutionsDir: filepath.Join(o.runDir, filters.SolutionStore)}
	if withDifficulty {
		p.Policy, p.PolicyID, p.Harness = diff.Policy, diff.PolicyID, diff.Harness
		p.Log = filters.NewAttemptLog()
		return p, nil
	}
	var err error
	if p.Policy, err = o.pol.build(); err != nil {
		return nil, err
	}
	if p.PolicyID, err = o.pol.identity(); err != nil {
		return nil, err
	}
	p.Harness = o.pol.harnessConfig()
	return p, nil
}

func newFilterCmd(g *globals) *cobra.Command {
	o := &buildOptions{}
	var stage string
	cmd := &cobra.Command{
		Use:     "filter --stage NAME --in FILE -o FILE --run-dir DIR",
		GroupID: "curate",
		Short:   "Run one stage on an existing set",
		Long: `filter runs a single curation stage (after validate, which every run needs) on an
existing dataset and writes the tasks it keeps, with the same run outputs as build. The
run directory's ledger makes a repeated filter resume instead of redoing sandbox work.`,
		Example: `  otcurate filter --stage flaky --in rl-5k.parquet -o rl-5k.flaky.parquet --run-dir out/flaky`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			stages := "validate"
			if stage != "" && stage != "validate" {
				stages += "," + stage
			}
			if err := cmd.Flags().Set("stages", stages); err != nil {
				return err
			}
			return runBuild(cmd, g, o)
		},
	}
	o.AddFlags(cmd.Flags())
	_ = cmd.Flags().MarkHidden("stages")
	_ = cmd.Flags().MarkHidden("pool")
	cmd.Flags().StringVar(&stage, "stage", "", "the stage: dedup, lint, env, flaky, difficulty or select")
	cmd.Flags().StringVar(&o.pool, "in", "", "input dataset (parquet file, shards or task directories)")
	_ = cmd.MarkFlagRequired("stage")
	_ = cmd.MarkFlagRequired("in")
	_ = cmd.MarkFlagRequired("output")
	_ = cmd.MarkFlagRequired("run-dir")
	return cmd
}

// withPolicyStages are the stages that join the default list with a
// policy.
func withPolicyStages() []string {
	var out []string
	for _, s := range filters.Stages() {
		if s.WithPolicy {
			out = append(out, s.Name)
		}
	}
	return out
}
