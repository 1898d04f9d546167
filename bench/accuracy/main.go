// Command accuracy measures how well and how cheaply otcurate's curation
// stages judge tasks, on generated pools whose defects are known
// (gen-pool's labels), and prints the figures issues 4 and 20 ask for:
//
//   - a labelled pool (default 500 tasks, the default defect mix, 30% of
//     them solution-less pymethods tasks) through the default `otcurate
//     build`, reported twice: for the tasks with an oracle and for the
//     oracle-free ones (no solution/: judged by the negative side alone
//     and kept as verifier_unproven, proof none). Per defect kind, how
//     many were dropped and with the expected reason (recall) and the
//     precision of the kind's expected reason; per reason, the precision
//     of the drops; good tasks dropped; the sandbox-seconds and verifier
//     runs a clean task of each kind costs; then the same build again
//     (resume from the ledger) and its time as a share of the first;
//   - flaky-verifier detection as a function of the flake probability
//     (0.05–0.5) with the verifier runs spent, by `otcurate filter --stage
//     flaky` on a pool of flaky verifiers only; then the same for
//     solution-less verifiers that pass the untouched project with a known
//     probability (pymethods flaky_verifier: an unseeded random sample of
//     the case table, a random CI shard that can be empty), against the
//     runs spent on the negative side (target: p = 0.5 caught ≥ 90%);
//   - sandbox-seconds per task against a naive baseline (a fresh, uncached
//     build and container per run, a fixed number of runs, no early stop)
//     on a sample of the labelled pool's tasks.
//
// It drives a built otcurate binary (-bin, default bin/otcurate: make build
// first), runs real sandboxes on the Docker engine (make setup first; or
// -sandbox fake: the fake backend, root, no engine, no naive baseline) and
// asserts nothing: it prints measurements and whether each target is met.
//
//	go run ./bench/accuracy [-n 500] [-pymethods-share 0.3] [-flaky 100] [-oracle-free-flaky 100] [-naive 12] [-workers 2] [-sandbox SPEC] [-bin bin/otcurate]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	concpool "github.com/sourcegraph/conc/pool"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/poolgen"
	"github.com/otcurate/otcurate/rundir"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/docker"
	"github.com/otcurate/otcurate/trial"
)

func main() {
	n := flag.Int("n", 500, "tasks in the labelled pool")
	seed := flag.Int64("seed", 21, "pool seed")
	nFlaky := flag.Int("flaky", 100, "tasks in the flaky-verifier pool (0 skips it)")
	nNaive := flag.Int("naive", 12, "tasks of the labelled pool run through the naive baseline (0 skips it)")
	naiveRuns := flag.Int("naive-runs", 9, "oracle runs per task of the naive baseline (the flaky stage's default budget)")
	workers := flag.Int("workers", 2, "tasks in flight")
	bin := flag.String("bin", "bin/otcurate", "otcurate binary")
	work := flag.String("work", "", "work directory (default: a new temporary one, removed at the end)")
	flag.StringVar(&cfg.sandbox, "sandbox", "", "otcurate --sandbox SPEC for the builds (default: otcurate's, the Docker engine); the naive baseline needs Docker and is skipped otherwise")
	flag.Float64Var(&cfg.pymShare, "pymethods-share", 0.3, "share of solution-less pymethods tasks in the labelled pool")
	flag.IntVar(&cfg.nFreeFlaky, "oracle-free-flaky", 100, "tasks in the solution-less flaky-verifier pool (0 skips it)")
	flag.Parse()
	if cfg.sandbox != "" && cfg.sandbox != "docker" && *nNaive > 0 {
		fmt.Fprintf(os.Stderr, "bench accuracy: -sandbox %s: no naive baseline (it runs on the Docker engine)\n", cfg.sandbox)
		*nNaive = 0
	}
	if err := run(*bin, *work, *n, *seed, *nFlaky, *nNaive, *naiveRuns, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "bench accuracy:", err)
		os.Exit(1)
	}
}

// cfg holds the options added for the oracle-free measurements.
var cfg struct {
	sandbox    string
	pymShare   float64
	nFreeFlaky int
}

// sandboxArgs is the --sandbox flag for otcurate, when one was given.
func sandboxArgs() []string {
	if cfg.sandbox == "" {
		return nil
	}
	return []string{"--sandbox", cfg.sandbox}
}

func run(bin, work string, n int, seed int64, nFlaky, nNaive, naiveRuns, workers int) error {
	if work == "" {
		dir, err := os.MkdirTemp("", "otcurate-accuracy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	bin, _ = filepath.Abs(bin)
	w := fmt.Sprint(workers)

	// 1. The labelled pool through the default build, twice.
	poolFile := filepath.Join(work, "labelled.parquet")
	fmt.Printf("== labelled pool: %d tasks, default defect mix, %.0f%% solution-less pymethods tasks, seed %d\n", n, 100*cfg.pymShare, seed)
	if _, err := os.Stat(poolFile); err != nil {
		if err := sh(bin, "gen-pool", "-n", fmt.Sprint(n), "--seed", fmt.Sprint(seed), "--pymethods-share", fmt.Sprint(cfg.pymShare), "-o", poolFile, "--log-level", "warn"); err != nil {
			return err
		}
	}
	runDir := filepath.Join(work, "run")
	if data, err := os.ReadFile(filepath.Join(runDir, rundir.LedgerFile)); err == nil {
		fmt.Printf("resuming an interrupted first build: its ledger holds %d outcomes (their cost is counted from the ledger)\n", strings.Count(string(data), "\n"))
	}
	args := append([]string{"build", "--pool", poolFile, "-o", filepath.Join(work, "kept.parquet"), "--run-dir", runDir, "--workers", w, "--log-level", "warn"}, sandboxArgs()...)
	first, err := timed(bin, args...)
	if err != nil {
		return err
	}
	// Keep the first run's decisions: the second run's are served from the
	// ledger and carry no cost.
	firstDecisions := filepath.Join(work, "first-decisions.jsonl")
	if err := copyFile(filepath.Join(runDir, rundir.DecisionsFile), firstDecisions); err != nil {
		return err
	}
	second, err := timed(bin, args...)
	if err != nil {
		return err
	}
	labels, err := readLabels(strings.TrimSuffix(poolFile, ".parquet") + ".labels.jsonl")
	if err != nil {
		return err
	}
	final, decs, err := readDecisions(firstDecisions)
	if err != nil {
		return err
	}
	again, _, err := readDecisions(filepath.Join(runDir, rundir.DecisionsFile))
	if err != nil {
		return err
	}
	same := 0
	for p, d := range final {
		if a := again[p]; a.Stage == d.Stage && a.Verdict == d.Verdict && a.Reason == d.Reason {
			same++
		}
	}
	fmt.Printf("second build: %d of %d final verdicts identical to the first\n", same, len(final))
	ours := ourCost(decs)
	for _, g := range []struct {
		name string
		free bool
	}{{"tasks with an oracle (kata, nl2bash)", false}, {"oracle-free tasks (pymethods: no solution/)", true}} {
		var sub []poolgen.Label
		for _, l := range labels {
			if (l.Family == poolgen.FamilyPyMethods) == g.free {
				sub = append(sub, l)
			}
		}
		fmt.Printf("\n-- %s: %d tasks\n", g.name, len(sub))
		if len(sub) == 0 {
			continue
		}
		acc := score(sub, final, flakyKeeps(decs))
		acc.print()
		printCost(sub, decs, ours)
	}
	var total float64
	for _, s := range ours {
		total += s
	}
	fmt.Printf("\nbuild: first run %.1fs wall, %.0f sandbox-seconds (%.2f per task that reached env); second run %.2fs = %.2f%% of the first (target < 5%%: %s)\n",
		first.Seconds(), total, total/float64(max(1, len(ours))), second.Seconds(), 100*second.Seconds()/first.Seconds(), met(second.Seconds() < 0.05*first.Seconds()))

	// 2. Flaky verifiers at known flake probabilities.
	if nFlaky > 0 {
		if err := flakeCurve(bin, work, nFlaky, seed, w); err != nil {
			return err
		}
	}

	// 2b. Solution-less verifiers that pass the untouched project sometimes.
	if cfg.nFreeFlaky > 0 {
		if err := oracleFreeFlakeCurve(bin, work, cfg.nFreeFlaky, seed, w); err != nil {
			return err
		}
	}

	// 3. The naive baseline on a sample of the same tasks.
	if nNaive > 0 {
		if err := naive(poolFile, labels, final, ours, nNaive, naiveRuns, workers); err != nil {
			return err
		}
	}
	return nil
}

// --- accuracy ------------------------------------------------------------

// expected lists the reasons that name each defect kind correctly. Kinds
// not listed here take the label's own expected reason.
var expected = map[string][]string{
	// A verifier that passes the untouched environment with probability p
	// is dropped as flaky_verifier when the negative side's runs disagree
	// and as nop_passes when every one of them passed.
	poolgen.DefectFlakyVerifier:   {filters.ReasonFlakyVerifier, filters.ReasonOracleFails, filters.ReasonFlakySolutionOrEnv, filters.ReasonNopPasses},
	poolgen.DefectSlowVerifier:    {filters.ReasonSlowVerifier, filters.ReasonSlowRelative},
	poolgen.DefectHangingVerifier: {filters.ReasonSlowVerifier},
	poolgen.DefectNopPasses:       {filters.ReasonNopPasses},
	poolgen.DefectWrongOracle:     {filters.ReasonOracleFails},
	// A verifier that never writes the reward file is caught statically
	// by lint when the omission is visible in test.sh (the stdout_only
	// mode prints the reward instead), at run time otherwise.
	poolgen.DefectRewardMissing: {string(trial.RewardMissing), filters.LintNoRewardWrite},
	poolgen.DefectRewardGarbage: {string(trial.RewardInvalid), string(trial.RewardAmbiguous), filters.ReasonNonBinaryOracleScore},
	poolgen.DefectBuildFails:    {string(trial.BuildFailed), string(trial.BuildNeedsNetwork)},
	poolgen.DefectBuildSlow:     {filters.ReasonEnvSlowBuild},
	poolgen.DefectTestsInImage:  {filters.LintTestsInImage},
	// lint sees some network use in test.sh; the gate sees the rest when
	// the verifier tries to connect (the oracle-free family's shapes).
	poolgen.DefectNetworkVerifier:    {filters.LintVerifierNetwork, string(trial.VerifierNeedsNetwork)},
	poolgen.DefectInstructionReveals: {filters.LintInstructionReveals},
	poolgen.DefectNoSolution:         {filters.LintNoSolution},
}

// Keep reasons of the flaky stage, naming the positive evidence behind a
// kept task (the manifest's proof column): written as literals so the
// benchmark reads decisions of any build, before and after the
// oracle-free gate.
const (
	keepOracle     = "oracle_passes"     // proof oracle
	keepSupplied   = "solution_passes"   // proof supplied
	keepPolicy     = "policy_solves"     // proof policy
	keepUnproven   = "verifier_unproven" // proof none
	dropUnproven   = "unproven"          // --require-proof
	flakyStageName = filters.StageFlaky
)

// proofOf is the proof a flaky-stage keep reason stands for.
func proofOf(reason string) string {
	switch reason {
	case keepOracle:
		return "oracle"
	case keepSupplied:
		return "supplied"
	case keepPolicy:
		return "policy"
	case keepUnproven:
		return "none"
	}
	return "?" + reason
}

// printCost prints, for the labels' clean tasks that reached the flaky
// stage, the proof they were kept with and the sandbox-seconds and
// verifier runs they cost over all sandbox stages (env, flaky, cheat, ...).
func printCost(labels []poolgen.Label, decs []pipeline.Decision, ours map[string]float64) {
	clean := map[string]bool{}
	for _, l := range labels {
		if l.Defect == "" {
			clean[l.Path] = true
		}
	}
	proofs := map[string]int{}
	runs := map[string]int{}
	flakySec := map[string]float64{}
	for _, d := range decs {
		if !clean[d.Path] || d.Stage != flakyStageName {
			continue
		}
		if d.Verdict == pipeline.Keep {
			proofs[proofOf(d.Reason)]++
		} else if d.Reason == dropUnproven {
			proofs["none (dropped: --require-proof)"]++
		}
		if d.Evidence != nil {
			runs[d.Path] += d.Evidence.Runs
			flakySec[d.Path] += d.Evidence.SandboxSeconds
		}
	}
	var n, r int
	var sec, fsec float64
	for p := range flakySec {
		n++
		r += runs[p]
		sec += ours[p]
		fsec += flakySec[p]
	}
	var ps []string
	for k, v := range proofs {
		ps = append(ps, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(ps)
	fmt.Printf("clean tasks judged by the flaky gate: %d; kept by proof: %s\n", n, strings.Join(ps, " "))
	if n > 0 {
		fmt.Printf("cost per clean task: %.1f sandbox-seconds in all sandbox stages, of which %.1f in the flaky gate over %.1f verifier runs\n",
			sec/float64(n), fsec/float64(n), float64(r)/float64(n))
	}
}

// probabilistic defects are judged by detection rate, not per task.
var probabilistic = map[string]bool{poolgen.DefectFlakyVerifier: true}

type kindStats struct {
	tasks, dropped, right, undecided int
	seen                             map[string]int // reasons given
}

type accuracy struct {
	kinds        map[string]*kindStats
	byReason     map[string][2]int // reason → (drops, drops of tasks whose kind expects it)
	goodDropped  []string
	goodTasks    int
	undecided    int
	wrongReasons []string
	// reasonKind counts drops by reason and the dropped task's kind.
	reasonKind map[string]map[string]int
	// expectedOf is each kind's label reason (for kinds not in expected).
	expectedOf map[string]string
}

// names reports whether reason is one that names defect kind correctly.
func (a *accuracy) names(kind, reason string) bool {
	if want, has := expected[kind]; has {
		return slices.Contains(want, reason)
	}
	return reason != "" && reason == a.expectedOf[kind]
}

func (a *accuracy) ok(kind, reason string, lab poolgen.Label) bool {
	if want, has := expected[kind]; has {
		return slices.Contains(want, reason)
	}
	return reason == lab.ExpectedReason
}

// keptRight lists defect kinds whose right verdict is a keep at the flaky
// stage with the given reason: an oracle-family task generated without its
// solution/ is, since lint only warns about no_solution by default, a
// solution-less task like any other, judged by the oracle-free gate and
// kept as verifier_unproven (lint still drops it when asked: --lint
// no_solution=drop).
var keptRight = map[string]string{poolgen.DefectNoSolution: keepUnproven}

// flakyKeeps maps each task kept by the flaky stage to its keep reason.
func flakyKeeps(decs []pipeline.Decision) map[string]string {
	out := map[string]string{}
	for _, d := range decs {
		if d.Stage == flakyStageName && d.Verdict == pipeline.Keep {
			out[d.Path] = d.Reason
		}
	}
	return out
}

func score(labels []poolgen.Label, final map[string]pipeline.Decision, kept map[string]string) *accuracy {
	a := &accuracy{kinds: map[string]*kindStats{}, byReason: map[string][2]int{}, reasonKind: map[string]map[string]int{}, expectedOf: map[string]string{}}
	for _, l := range labels {
		if l.Defect != "" && l.ExpectedReason != "" {
			a.expectedOf[l.Defect] = l.ExpectedReason
		}
		d, ok := final[l.Path]
		kind := l.Defect
		if kind == "" {
			kind = "(good)"
		}
		ks := a.kinds[kind]
		if ks == nil {
			ks = &kindStats{seen: map[string]int{}}
			a.kinds[kind] = ks
		}
		ks.tasks++
		if !ok {
			continue
		}
		switch d.Verdict {
		case pipeline.Keep:
			if want, has := keptRight[l.Defect]; has && kept[l.Path] == want {
				ks.right++
				ks.seen["kept:"+want]++
			}
		case pipeline.Error:
			ks.undecided++
			a.undecided++
		case pipeline.Drop:
			ks.dropped++
			ks.seen[d.Reason]++
			if a.reasonKind[d.Reason] == nil {
				a.reasonKind[d.Reason] = map[string]int{}
			}
			a.reasonKind[d.Reason][l.Defect]++
			br := a.byReason[d.Reason]
			br[0]++
			if l.Defect != "" && a.ok(l.Defect, d.Reason, l) {
				ks.right++
				br[1]++
			} else if l.Defect != "" {
				a.wrongReasons = append(a.wrongReasons, fmt.Sprintf("%s (%s): dropped as %s/%s", l.Path, l.Defect, d.Stage, d.Reason))
			}
			a.byReason[d.Reason] = br
		}
		if l.Defect == "" {
			a.goodTasks++
			if d.Verdict == pipeline.Drop {
				a.goodDropped = append(a.goodDropped, fmt.Sprintf("%s: %s/%s: %s", l.Path, d.Stage, d.Reason, d.Detail))
			}
		}
	}
	return a
}

func (a *accuracy) print() {
	fmt.Printf("\n%-22s %6s %8s %13s %9s %10s %10s  %s\n", "defect kind", "tasks", "dropped", "right reason", "recall", "precision", "undecided", "reasons given")
	kinds := make([]string, 0, len(a.kinds))
	for k := range a.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var detTasks, detRight int
	for _, k := range kinds {
		ks := a.kinds[k]
		var seen []string
		for r, c := range ks.seen {
			seen = append(seen, fmt.Sprintf("%s=%d", r, c))
		}
		sort.Strings(seen)
		prec := "-"
		if k != "(good)" {
			// Precision of the kind: of the drops (in this group) with a
			// reason that names this kind, the share on tasks of this kind.
			var named, mine int
			for r, br := range a.byReason {
				if a.names(k, r) {
					named += br[0]
					mine += a.reasonKind[r][k]
				}
			}
			if named > 0 {
				prec = fmt.Sprintf("%.1f%%", 100*float64(mine)/float64(named))
			}
		}
		fmt.Printf("%-22s %6d %8d %13d %8.1f%% %10s %10d  %s\n", k, ks.tasks, ks.dropped, ks.right, 100*float64(ks.right)/float64(max(1, ks.tasks)), prec, ks.undecided, strings.Join(seen, " "))
		if k != "(good)" && !probabilistic[k] {
			detTasks += ks.tasks
			detRight += ks.right
		}
	}
	fmt.Printf("\n%-34s %6s %10s\n", "drop reason", "drops", "precision")
	reasons := make([]string, 0, len(a.byReason))
	for r := range a.byReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		br := a.byReason[r]
		fmt.Printf("%-34s %6d %9.1f%%\n", r, br[0], 100*float64(br[1])/float64(br[0]))
	}
	for _, w := range a.wrongReasons {
		fmt.Println("  wrong reason:", w)
	}
	for _, g := range a.goodDropped {
		fmt.Println("  good task dropped:", g)
	}
	fmt.Printf("\ndeterministic defects given the right verdict (dropped with the expected reason; no_solution: kept verifier_unproven or dropped by lint when asked): %d of %d (target: all: %s)\n", detRight, detTasks, met(detRight == detTasks))
	if good := a.kinds["(good)"]; good != nil && good.undecided > 0 {
		fmt.Printf("good tasks undecided: %d\n", good.undecided)
	}
	fmt.Printf("good tasks dropped: %d of %d (target 0: %s); undecided (infrastructure): %d\n", len(a.goodDropped), a.goodTasks, met(len(a.goodDropped) == 0), a.undecided)
}

// --- flake curve ---------------------------------------------------------

func flakeCurve(bin, work string, n int, seed int64, workers string) error {
	poolFile := filepath.Join(work, "flaky.parquet")
	fmt.Printf("\n== flaky-verifier pool: %d tasks, flake probability drawn from {0.05, 0.1, 0.2, 0.3, 0.5}\n", n)
	if err := sh(bin, "gen-pool", "-n", fmt.Sprint(n), "--seed", fmt.Sprint(seed+1), "--rates", "flaky_verifier=1", "-o", poolFile, "--log-level", "warn"); err != nil {
		return err
	}
	runDir := filepath.Join(work, "flaky-run")
	if _, err := timed(bin, "filter", "--stage", "flaky", "--in", poolFile, "-o", filepath.Join(work, "flaky-kept.parquet"),
		"--run-dir", runDir, "--workers", workers, "--log-level", "warn"); err != nil {
		return err
	}
	labels, err := readLabels(strings.TrimSuffix(poolFile, ".parquet") + ".labels.jsonl")
	if err != nil {
		return err
	}
	final, _, err := readDecisions(filepath.Join(runDir, rundir.DecisionsFile))
	if err != nil {
		return err
	}
	type row struct{ tasks, detected, runs, undecided int }
	rows := map[float64]*row{}
	for _, l := range labels {
		p, _ := l.Params["flake_prob"].(float64)
		r := rows[p]
		if r == nil {
			r = &row{}
			rows[p] = r
		}
		r.tasks++
		d := final[l.Path]
		if d.Stage != filters.StageFlaky {
			continue // dropped before the gate (e.g. by validate): not counted as a detection
		}
		if d.Evidence != nil {
			r.runs += d.Evidence.Runs
		}
		switch d.Verdict {
		case pipeline.Drop:
			r.detected++
		case pipeline.Error:
			r.undecided++
		}
	}
	ps := make([]float64, 0, len(rows))
	for p := range rows {
		ps = append(ps, p)
	}
	sort.Float64s(ps)
	fmt.Printf("%-10s %6s %9s %10s %22s %18s\n", "flake p", "tasks", "detected", "rate", "expected 1-(1-p)^9", "runs per task")
	ok := true
	for _, p := range ps {
		r := rows[p]
		rate := float64(r.detected) / float64(max(1, r.tasks-r.undecided))
		exp := 1.0
		for range 9 {
			exp *= 1 - p
		}
		fmt.Printf("%-10.2f %6d %9d %9.1f%% %21.1f%% %18.2f\n", p, r.tasks, r.detected, 100*rate, 100*(1-exp), float64(r.runs)/float64(max(1, r.tasks)))
		if p >= 0.3 && rate < 0.95 {
			ok = false
		}
	}
	fmt.Printf("flaky verifiers detected ≥ 95%% at p ≥ 0.3: %s\n", met(ok))
	return nil
}

// oracleFreeFlakeCurve measures the negative side alone: a pool of
// solution-less tasks whose verifier passes the untouched project with a
// known probability (labels' flake_prob), through `filter --stage flaky`.
// Every run such a task gets is a negative-side run (there is no oracle).
func oracleFreeFlakeCurve(bin, work string, n int, seed int64, workers string) error {
	poolFile := filepath.Join(work, "free-flaky.parquet")
	fmt.Printf("\n== oracle-free flaky-verifier pool: %d solution-less tasks whose verifier passes the untouched project with probability p\n", n)
	if err := sh(bin, "gen-pool", "-n", fmt.Sprint(n), "--seed", fmt.Sprint(seed+2), "--pymethods-share", "1", "--pymethods-rates", "flaky_verifier=1",
		"-o", poolFile, "--log-level", "warn"); err != nil {
		return err
	}
	runDir := filepath.Join(work, "free-flaky-run")
	args := append([]string{"filter", "--stage", "flaky", "--in", poolFile, "-o", filepath.Join(work, "free-flaky-kept.parquet"),
		"--run-dir", runDir, "--workers", workers, "--log-level", "warn"}, sandboxArgs()...)
	if _, err := timed(bin, args...); err != nil {
		return err
	}
	labels, err := readLabels(strings.TrimSuffix(poolFile, ".parquet") + ".labels.jsonl")
	if err != nil {
		return err
	}
	_, all, err := readDecisions(filepath.Join(runDir, rundir.DecisionsFile))
	if err != nil {
		return err
	}
	// The flaky stage's own decision per task (a kept task's last decision
	// is a later stage's).
	final := map[string]pipeline.Decision{}
	for _, d := range all {
		if d.Stage == filters.StageFlaky {
			final[d.Path] = d
		}
	}
	type row struct {
		tasks, detected, runs, undecided int
		seconds                          float64
		reasons                          map[string]int
	}
	rows := map[float64]*row{}
	for _, l := range labels {
		p, _ := l.Params["flake_prob"].(float64)
		r := rows[p]
		if r == nil {
			r = &row{reasons: map[string]int{}}
			rows[p] = r
		}
		r.tasks++
		d := final[l.Path]
		if d.Stage != filters.StageFlaky {
			continue
		}
		if d.Evidence != nil {
			r.runs += d.Evidence.Runs
			r.seconds += d.Evidence.SandboxSeconds
		}
		r.reasons[d.Reason]++
		switch d.Verdict {
		case pipeline.Drop:
			r.detected++
		case pipeline.Error:
			r.undecided++
		}
	}
	ps := make([]float64, 0, len(rows))
	for p := range rows {
		ps = append(ps, p)
	}
	sort.Float64s(ps)
	fmt.Printf("%-8s %6s %9s %8s %20s %14s %16s  %s\n", "p", "tasks", "detected", "rate", "1-(1-p)^5 (5 runs)", "nop runs/task", "sandbox-s/task", "verdicts")
	ok := true
	for _, p := range ps {
		r := rows[p]
		rate := float64(r.detected) / float64(max(1, r.tasks-r.undecided))
		exp := 1.0
		for range 5 {
			exp *= 1 - p
		}
		var vs []string
		for k, v := range r.reasons {
			vs = append(vs, fmt.Sprintf("%s=%d", k, v))
		}
		sort.Strings(vs)
		fmt.Printf("%-8.3f %6d %9d %7.1f%% %19.1f%% %14.2f %16.1f  %s\n", p, r.tasks, r.detected, 100*rate, 100*(1-exp),
			float64(r.runs)/float64(max(1, r.tasks)), r.seconds/float64(max(1, r.tasks)), strings.Join(vs, " "))
		if p >= 0.5 && rate < 0.9 {
			ok = false
		}
	}
	fmt.Printf("untouched-project passes with p ≥ 0.5 caught ≥ 90%%: %s\n", met(ok))
	return nil
}

// --- naive baseline ------------------------------------------------------

// naive runs a sample of the labelled pool's tasks the naive way: for each
// task one nop run and naiveRuns oracle runs, each in a fresh container
// built from scratch (no image or layer cache), with no early stop, and
// compares the sandbox-seconds with what the build spent on the same tasks.
func naive(poolFile string, labels []poolgen.Label, final map[string]pipeline.Decision, ours map[string]float64, n, runs, workers int) error {
	fmt.Printf("\n== naive baseline: %d tasks of the labelled pool, 1 nop + %d oracle runs each, fresh uncached build and container per run\n", n, runs)
	// The sample: tasks that reached the sandbox stages, good and broken
	// in the pool's proportions (the first n in pool order).
	var sample []string
	for _, l := range labels {
		if _, ok := ours[l.Path]; ok && len(sample) < n {
			sample = append(sample, l.Path)
		}
	}
	src, err := pool.Open(poolFile)
	if err != nil {
		return err
	}
	blobs := map[string][]byte{}
	want := map[string]bool{}
	for _, p := range sample {
		want[p] = true
	}
	if err := src.Each(context.Background(), nil, func(r pool.Record) error {
		if want[r.Path] {
			blobs[r.Path] = append([]byte(nil), r.Blob...)
		}
		return nil
	}); err != nil {
		return err
	}
	ctx := context.Background()
	runID := fmt.Sprintf("bench-naive-%d", time.Now().UnixNano())
	d, err := docker.New(ctx, docker.Options{RunID: runID})
	if err != nil {
		return err
	}
	defer func() {
		d.GC(context.Background(), sandbox.GCOptions{Run: runID})
		d.Close()
	}()
	runner := &trial.Runner{Backend: d}
	labelsOf := map[string]string{sandbox.LabelRun: runID}
	type res struct {
		path    string
		seconds float64
		dropped bool
	}
	p := concpool.NewWithResults[res]().WithErrors().WithMaxGoroutines(workers)
	for _, path := range sample {
		p.Go(func() (res, error) {
			t, err := trial.LoadTask(path, blobs[path], bundle.Limits{})
			if err != nil {
				return res{}, fmt.Errorf("naive %s: %w", path, err)
			}
			r := res{path: path}
			add := func(rs []trial.Result) {
				for _, x := range rs { // Isolate: every result is a session of its own
					dd := x.Durations
					r.seconds += dd.Build + dd.Start + dd.Solve + dd.Verify + dd.Teardown
					if !x.Scored() || (x.Agent == trial.Nop) != (*x.Reward == 0) {
						r.dropped = true
					}
				}
			}
			for _, o := range []trial.Options{
				{Agent: trial.Nop, Repeats: 1, Rebuild: true, Labels: labelsOf},
				{Agent: trial.Oracle, Repeats: runs, Isolate: true, Rebuild: true, Labels: labelsOf},
			} {
				rs, err := runner.Run(ctx, t, o)
				if err != nil {
					return res{}, fmt.Errorf("naive %s: %w", path, err)
				}
				add(rs)
			}
			return r, nil
		})
	}
	results, err := p.Wait()
	if err != nil {
		return err
	}
	var naiveSum, oursSum float64
	agree := 0
	for _, r := range results {
		naiveSum += r.seconds
		oursSum += ours[r.path]
		if r.dropped == (final[r.path].Verdict == pipeline.Drop) {
			agree++
		}
	}
	k := float64(len(sample))
	fmt.Printf("sandbox-seconds per task: naive %.1f, otcurate %.1f (same tasks) → otcurate uses %.2f× fewer (target ≥ 2×: %s)\n",
		naiveSum/k, oursSum/k, naiveSum/max(oursSum, 1e-9), met(naiveSum >= 2*oursSum))
	fmt.Printf("verdicts (drop or keep) agreeing with the build's: %d of %d; detection is equal by construction: both spend up to %d oracle runs and drop at the first run that disagrees\n",
		agree, len(sample), runs)
	return nil
}

// --- helpers -------------------------------------------------------------

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

func readLabels(name string) ([]poolgen.Label, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return poolgen.ReadLabels(f)
}

// readDecisions returns each task's last decision (its final verdict) and
// every decision.
func readDecisions(name string) (map[string]pipeline.Decision, []pipeline.Decision, error) {
	all, err := rundir.ReadDecisions(name, filters.Layout())
	if err != nil {
		return nil, nil, err
	}
	final := map[string]pipeline.Decision{}
	for _, d := range all {
		if prev, ok := final[d.Path]; !ok || prev.Verdict == pipeline.Keep {
			final[d.Path] = d
		}
	}
	return final, all, nil
}

// ourCost sums each task's sandbox-seconds over the stages that ran it
// (read from the first build's decisions, whose evidence is its own or,
// when that build resumed, the run's that decided it).
func ourCost(decs []pipeline.Decision) map[string]float64 {
	out := map[string]float64{}
	for _, d := range decs {
		if d.Stage == filters.StageEnv {
			out[d.Path] += 0 // reached the sandbox stages (a shared env measurement costs this task nothing)
		}
		if d.Evidence != nil { // from the ledger: what the run that decided it spent
			out[d.Path] += d.Evidence.SandboxSeconds
		}
	}
	return out
}

func timed(bin string, args ...string) (time.Duration, error) {
	t0 := time.Now()
	err := sh(bin, args...)
	return time.Since(t0), err
}

func sh(bin string, args ...string) error {
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = os.Stderr, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
		return nil // some tasks undecided: reported from the decisions
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return nil
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
