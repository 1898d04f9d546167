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
	// Runner runs tasks in sandboxes (env and flaky stages).
	Runner *trial.Runner
	// Labels are put on every sandbox (the run id).
	Labels map[string]string
	// FlakyRepeats is the flaky stage's oracle verifier runs (0 = default).
	FlakyRepeats int
	// EnvMaxBuild is the env stage's slow-build threshold (0 = default).
	EnvMaxBuild time.Duration
	// EnvRepeats is the env stage's measurements per environment.
	EnvRepeats int
	// Difficulty configures the difficulty stage (its Runner, Limits and
	// Labels are filled from the fields above).
	Difficulty Difficulty
}

// DefaultStages is the stage list of `otcurate build`: every curation
// stage but difficulty, which joins it (see DefaultStageList) when a policy
// is configured. env and flaky run tasks in sandboxes.
var DefaultStages = []string{pipeline.StageValidate, pipeline.StageDedup, pipeline.StageLint,
	pipeline.StageEnv, pipeline.StageFlaky, pipeline.StageSelect}

// StaticStages are the stages that need no sandbox, for a quick pass.
var StaticStages = []string{pipeline.StageValidate, pipeline.StageDedup, pipeline.StageLint, pipeline.StageSelect}

// DefaultStageList is the default stage list, with difficulty before
// select when a policy is configured.
func DefaultStageList(withPolicy bool) []string {
	out := slices.Clone(DefaultStages)
	if withPolicy {
		out = slices.Insert(out, len(out)-1, pipeline.StageDifficulty)
	}
	return out
}

// ParseStages splits a comma-separated stage list. validate is always run
// first, because it is what turns rows into tasks; it is added when left
// out.
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
	if names[0] != pipeline.StageValidate {
		if seen[pipeline.StageValidate] {
			return nil, fmt.Errorf("validate must be the first stage")
		}
		names = append([]string{pipeline.StageValidate}, names...)
	}
	return names, nil
}

// Build turns stage names into stages.
func Build(names []string, opts Options) ([]pipeline.Stage, error) {
	var out []pipeline.Stage
	for _, n := range names {
		switch n {
		case pipeline.StageValidate:
			out = append(out, Validate{Limits: opts.Limits, StratifyBy: opts.StratifyBy})
		case pipeline.StageDedup:
			out = append(out, Dedup{})
		case pipeline.StageLint:
			out = append(out, Lint{Actions: opts.Lint})
		case pipeline.StageEnv, pipeline.StageFlaky:
			if opts.Runner == nil {
				return nil, fmt.Errorf("stage %s runs tasks and needs a sandbox backend", n)
			}
			if n == pipeline.StageEnv {
				env := NewEnv(opts.Runner, opts.Limits, opts.Labels)
				if opts.EnvMaxBuild > 0 {
					env.MaxBuild = opts.EnvMaxBuild
				}
				env.Repeats = opts.EnvRepeats
				out = append(out, env)
			} else {
				out = append(out, Flaky{Runner: opts.Runner, Limits: opts.Limits, Labels: opts.Labels, Repeats: opts.FlakyRepeats})
				if !slices.Contains(names, pipeline.StageVerifierTime) {
					out = append(out, VerifierTime{}) // the relative half of the slow-verifier rule
				}
			}
		case pipeline.StageDifficulty:
			if opts.Runner == nil {
				return nil, fmt.Errorf("stage %s runs tasks and needs a sandbox backend", n)
			}
			d := opts.Difficulty
			d.Runner, d.Limits, d.Labels = opts.Runner, opts.Limits, opts.Labels
			if err := d.Validate(); err != nil {
				return nil, err
			}
			out = append(out, d)
		case pipeline.StageVerifierTime:
			out = append(out, VerifierTime{})
		case pipeline.StageSelect:
			out = append(out, Select{Target: opts.Target, Seed: opts.Seed, Stratified: opts.StratifyBy != ""})
		default:
			return nil, fmt.Errorf("unknown stage %q (stages: validate, dedup, lint, env, flaky, verifier_time, difficulty, select)", n)
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
		v.OwnReadsOnly = len(out) == 1 || !isItemStage(out[1])
		out[0] = v
	}
	return out, nil
}

// NeedsSandbox reports whether any of the stages runs tasks.
func NeedsSandbox(names []string) bool { return len(SandboxStages(names)) > 0 }

// SandboxStages returns the stages of names that run tasks in sandboxes.
func SandboxStages(names []string) []string {
	var out []string
	for _, n := range names {
		if n == pipeline.StageEnv || n == pipeline.StageFlaky || n == pipeline.StageDifficulty {
			out = append(out, n)
		}
	}
	return out
}

func isItemStage(s pipeline.Stage) bool {
	_, ok := s.(pipeline.ItemStage)
	return ok
}
