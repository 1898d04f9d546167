package filters

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/trial"
)

// Options configure the stages built by Build.
type Options struct {
	Limits bundle.Limits
	Target int
	Seed   int64
	// StratifyBy is a task.toml [metadata] key: select keeps each value's
	// share of the survivors.
	StratifyBy string
	Lint       map[string]Action // lint check actions; nil = DefaultLintActions
	// AllowNetwork: sandboxes give a task the network it asks for
	// (--allow-network; the Runner's own setting), and lint judges a
	// verifier that downloads by it.
	AllowNetwork bool
	// Runner runs tasks in sandboxes (env and flaky stages).
	Runner *trial.Runner
	// Labels are put on every sandbox (the run id).
	Labels map[string]string
	// FlakyRepeats is the flaky stage's oracle verifier runs (0 = default).
	FlakyRepeats int
	// NopRepeats and NopSessions are the flaky stage's negative-side runs
	// and the fresh sandboxes they are spread over (0 = default).
	NopRepeats, NopSessions int
	// Solutions are where the flaky stage finds solutions of tasks that
	// ship none.
	Solutions Solutions
	// RequireProof: the flaky stage drops tasks without positive evidence.
	RequireProof bool
	// EnvMaxBuild is the env stage's slow-build threshold (0 = default).
	EnvMaxBuild time.Duration
	// EnvRepeats is the env stage's measurements per environment.
	EnvRepeats int
	// Difficulty configures the difficulty stage (its Runner, Limits and
	// Labels are filled from the fields above).
	Difficulty Difficulty
	// Prover, when set, is the flaky stage's policy prover for tasks
	// without an oracle (its Runner and Labels are filled from the fields
	// above).
	Prover *PolicyProver
	// NearDupThreshold is near_dup's Jaccard threshold (0 = default).
	NearDupThreshold float64
	// NearDupSketchDir, when set (a sharded run's run directory), receives
	// near_dup's sketches of the tasks it keeps, for the merge.
	NearDupSketchDir string
	// Decontam configures the decontam stage (its benchmark pools).
	Decontam DecontamOptions
}

// DefaultStageList is `otcurate build`'s stage list: the table's default
// stages, with those that need a policy (difficulty) when one is
// configured.
func DefaultStageList(withPolicy bool) []string {
	var out []string
	for _, s := range Stages() {
		if s.Default || (withPolicy && s.WithPolicy) {
			out = append(out, s.Name)
		}
	}
	return out
}

// StaticStages are the default stages that need no sandbox, for a quick
// pass.
func StaticStages() []string {
	var out []string
	for _, s := range Stages() {
		if s.Default && !s.Sandbox {
			out = append(out, s.Name)
		}
	}
	return out
}

// ParseStages splits a comma-separated stage list. The intake stage
// (validate) is always run first, because it is what turns rows into
// tasks; it is added when left out.
func ParseStages(list string) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if seen[n] {
			return nil, fmt.Errorf("stage %q listed twice", n)
		}
		seen[n] = true
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no stages given")
	}
	for _, s := range Stages() {
		if !s.Intake || names[0] == s.Name {
			continue
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("%s must be the first stage", s.Name)
		}
		names = append([]string{s.Name}, names...)
	}
	return names, nil
}

// Build turns stage names into stages, in order.
func Build(names []string, opts Options) ([]pipeline.Stage, error) {
	var out []pipeline.Stage
	for _, n := range names {
		spec, ok := LookupStage(n)
		if !ok {
			return nil, fmt.Errorf("unknown stage %q (stages: %s)", n, strings.Join(StageNames(), ", "))
		}
		specs := []StageSpec{spec}
		if c := spec.Companion; c != "" && !slices.Contains(names, c) {
			if cs, ok := LookupStage(c); ok {
				specs = append(specs, cs)
			}
		}
		for _, spec := range specs {
			if spec.Sandbox && opts.Runner == nil {
				return nil, fmt.Errorf("stage %s runs tasks and needs a sandbox backend", spec.Name)
			}
			st, err := spec.New(opts)
			if err != nil {
				return nil, err
			}
			out = append(out, st)
		}
	}
	// The engine hands validate's decoded bundle to the item stages that
	// directly follow it (one pass); after a set stage, tasks are decoded
	// again. With none following, validate need not hold what it does not
	// read.
	if len(out) == 0 {
		return out, nil
	}
	if v, ok := out[0].(Validate); ok {
		for _, st := range out[1:] {
			if o, ok := st.(ContentObserver); ok {
				v.Observers = append(v.Observers, o)
			}
		}
		v.OwnReadsOnly = len(out) == 1 || !isItemStage(out[1])
		out[0] = v
	}
	return out, nil
}

// NeedsSandbox reports whether any of the stages runs tasks.
func NeedsSandbox(names []string) bool { return len(SandboxStages(names)) > 0 }

// SandboxStages returns the stages of names that run tasks in sandboxes.
func SandboxStages(names []string) []string {
	return namesWhere(names, func(s StageSpec) bool { return s.Sandbox })
}

// WholePoolStages returns the stages of names that must see the whole
// pool's survivors (select): a sharded run defers them to the merge.
func WholePoolStages(names []string) []string {
	return namesWhere(names, func(s StageSpec) bool { return s.WholePool })
}

func namesWhere(names []string, f func(StageSpec) bool) []string {
	var out []string
	for _, n := range names {
		if s, ok := LookupStage(n); ok && f(s) {
			out = append(out, n)
		}
	}
	return out
}

func isItemStage(s pipeline.Stage) bool {
	_, ok := s.(pipeline.ItemStage)
	return ok
}
