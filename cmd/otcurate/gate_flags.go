package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/spf13/pflag"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
)

// gateOptions are the flaky stage's flags beyond --flaky-repeats: the
// negative side and the positive evidence of tasks without an oracle.
type gateOptions struct {
	nopRepeats   int
	nopSessions  int
	solutions    string
	requireProof bool
	attach       bool
}

func (o *gateOptions) addFlags(f *pflag.FlagSet) {
	f.IntVar(&o.nopRepeats, "nop-repeats", filters.DefaultNopRepeats, "flaky stage: verifier runs on the untouched environment per task (every one must score 0; stops at the first disagreement)")
	f.IntVar(&o.nopSessions, "nop-sessions", 2, "flaky stage: fresh sandboxes the --nop-repeats runs are spread over")
	f.StringVar(&o.solutions, "solutions", "", "flaky stage: solutions for tasks that ship none, as DIR/<task path>/solution/solve.sh (or DIR/<sha256 of task_binary>/solution/, the layout of RUN_DIR/solutions)")
	f.BoolVar(&o.attach, "attach-solutions", false, "output: put the supplied or policy-discovered solution that proved a kept task as solution/ into its task_binary (tasks that ship none; other bundles unchanged)")
	f.BoolVar(&o.requireProof, "require-proof", false, "flaky stage: drop tasks without positive evidence (no oracle, supplied solution or policy proof) as unproven instead of keeping them as verifier_unproven")
}

// apply sets the flaky options and lists the --solutions entries (task
// keys) to check against the pool once its paths are known. Discovered
// solutions are read from RUN_DIR/solutions.
func (o *gateOptions) apply(fo *filters.Options, runDir string) ([]string, error) {
	fo.NopRepeats, fo.NopSessions, fo.RequireProof = o.nopRepeats, o.nopSessions, o.requireProof
	fo.Solutions = filters.Solutions{Dir: o.solutions}
	if runDir != "" {
		fo.Solutions.Store = filepath.Join(runDir, "solutions")
	}
	if o.solutions == "" {
		return nil, nil
	}
	keys, err := filters.SolutionsDirEntries(o.solutions)
	if err != nil {
		return nil, usageErr(err)
	}
	return keys, nil
}

var blobHashKey = regexp.MustCompile(`^[0-9a-f]{64}$`)

// warnUnknownSolutions names the --solutions entries that match no task
// path of the pool: a typo or a stale directory would otherwise be
// silently ignored. It runs once the pool has been read (the paths are
// known only then). Entries named by a task_binary hash are not checked
// (the run keeps no blob hashes).
func warnUnknownSolutions(logger *slog.Logger, dir string, keys []string, tasks []*pipeline.Task) {
	if len(keys) == 0 {
		return
	}
	paths := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		paths[t.Path] = true
	}
	var unknown []string
	for _, k := range keys {
		if !paths[k] && !blobHashKey.MatchString(k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return
	}
	shown := unknown[:min(len(unknown), 10)]
	logger.Warn("--solutions: entries that match no task path of the pool were not used", "dir", dir, "count", len(unknown), "entries", shown)
}

// attacher is the output's --attach-solutions, nil when not asked for.
// It needs the flaky stage, whose proofs say which tasks get a solution.
func (o *gateOptions) attacher(fo filters.Options, names []string) (*filters.SolutionAttacher, error) {
	if !o.attach {
		return nil, nil
	}
	if !slices.Contains(names, filters.StageFlaky) {
		return nil, usageErr(fmt.Errorf("--attach-solutions attaches the solutions the flaky stage proved tasks with: it needs the flaky stage"))
	}
	return &filters.SolutionAttacher{Solutions: fo.Solutions, Limits: fo.Limits}, nil
}

// reportAttached says what --attach-solutions did: how many bundles got
// a solution, and each task it chose whose solution could not be attached.
func reportAttached(w io.Writer, logger *slog.Logger, a *filters.SolutionAttacher) {
	if a == nil {
		return
	}
	missed := a.Missed()
	for _, m := range missed {
		logger.Warn("--attach-solutions: written without a solution", "task", m)
	}
	note := ""
	if len(missed) > 0 {
		note = " (named in the warnings above)"
	}
	fmt.Fprintf(w, "attach-solutions: %d kept tasks got their supplied or discovered solution as solution/, %d could not%s\n", len(a.Attached()), len(missed), note)
}
