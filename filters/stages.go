package filters

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/rundir"
)

// Stage names, in their default order. They are part of the run-output
// contract (decisions.jsonl, the manifest's column prefixes).
const (
	StageValidate = "validate"
	StageDedup    = "dedup"
	// StageNearDup follows dedup: near-identical instruction and tests.
	StageNearDup = "near_dup"
	// StageDecontam drops tasks that overlap a benchmark (--against).
	StageDecontam = "decontam"
	StageLint     = "lint"
	StageEnv      = "env"
	StageFlaky    = "flaky"
	// StageVerifierTime follows flaky: verifiers slow relative to the pool.
	StageVerifierTime = "verifier_time"
	// StageCheat follows flaky and verifier_time: verifiers that accept
	// a generic cheat.
	StageCheat      = "cheat"
	StageDifficulty = "difficulty"
	StageSelect     = "select"
)

// StageSpec is one row of the stage table: everything the CLI, the
// registry and the docs know about a stage. The engine learns what it
// needs from the stage values New builds (pipeline.Intake, ItemStage or
// SetStage, pipeline.Expensive, pipeline.Formatted).
type StageSpec struct {
	Name string
	// Set: the stage decides over all surviving tasks at once (a
	// pipeline.SetStage) and sees only their metadata; otherwise it
	// decides one task at a time (a pipeline.ItemStage).
	Set bool
	// Intake: the stage turns pool rows into tasks (a pipeline.Intake).
	// It always runs first and is added to a stage list that leaves it out.
	Intake bool
	// Sandbox: the stage runs tasks in sandboxes, so it needs a backend;
	// its outcomes go through the ledger and carry evidence.
	Sandbox bool
	// Format is what the stage writes in the run directory beyond its
	// verdict: a score (seconds or a rate: `score` in decisions.jsonl,
	// <stage>_score in the manifest) and evidence columns.
	Format rundir.StageFormat
	// Reads is what the stage decides from.
	Reads string
	// Default: the stage is in `otcurate build`'s default list.
	Default bool
	// WithPolicy: the stage joins the default list when a policy is
	// configured.
	WithPolicy bool
	// WithAgainst: the stage joins the default list when benchmark pools
	// are given (--against).
	WithAgainst bool
	// WholePool: the stage must see the survivors of the whole pool, so a
	// sharded run defers it to `otcurate merge`.
	WholePool bool
	// Companion is a stage Build appends right after this one unless the
	// list names it itself.
	Companion string
	// Help is a one-line description for the CLI and the docs.
	Help string
	// New builds the stage from the options.
	New func(Options) (pipeline.Stage, error)
}

// Stages returns the stage table, in the default order.
func Stages() []StageSpec {
	return []StageSpec{
		{Name: StageValidate, Intake: true, Default: true,
			Reads: "the row: decodes the bundle (limits), parses task.toml and instruction.md",
			Help:  "decode each bundle safely, hash it, check it is a usable Harbor task",
			New: func(o Options) (pipeline.Stage, error) {
				return Validate{Limits: o.Limits, StratifyBy: o.StratifyBy}, nil
			}},
		{Name: StageDedup, Set: true, Default: true,
			Reads: "content hashes set by validate",
			Help:  "drop tasks whose content equals an earlier task's",
			New:   func(Options) (pipeline.Stage, error) { return Dedup{}, nil }},
		{Name: StageNearDup, Set: true, Default: true,
			Reads: "MinHash signatures of the instruction and tests/ text, taken during validate's pass",
			Help:  "drop tasks whose instruction and tests are both near-identical to an earlier task's (--near-dup-threshold)",
			New: func(o Options) (pipeline.Stage, error) {
				nd, err := NewNearDup(o.NearDupThreshold)
				if err == nil && o.NearDupSketchDir != "" {
					nd.SketchFile = filepath.Join(o.NearDupSketchDir, NearDupSketchFile)
				}
				return nd, err
			}},
		{Name: StageDecontam, WithAgainst: true,
			Reads: "the instruction, against the benchmark pools of --against",
			Help:  "drop tasks whose instruction shares an n-gram with, or is a fuzzy match of, a benchmark task (--against)",
			New:   func(o Options) (pipeline.Stage, error) { return NewDecontam(o.Decontam) }},
		{Name: StageLint, Default: true,
			Reads: "the decoded bundle's files",
			Help:  "static checks of the files (tests or solution in the image, verifier without reward, ...)",
			New: func(o Options) (pipeline.Stage, error) {
				return Lint{Actions: o.Lint, AllowNetwork: o.AllowNetwork}, nil
			}},
		{Name: StageEnv, Sandbox: true, Format: rundir.StageFormat{Evidence: true}, Default: true,
			Reads: "the decoded bundle; builds, starts and tears down each unique environment",
			Help:  "build and start each unique environment once; drop build failures, unhealthy or slow ones",
			New: func(o Options) (pipeline.Stage, error) {
				env := NewEnv(o.Runner, o.Limits, o.Labels)
				if o.EnvMaxBuild > 0 {
					env.MaxBuild = o.EnvMaxBuild
				}
				env.Repeats = o.EnvRepeats
				return env, nil
			}},
		{Name: StageFlaky, Sandbox: true, Format: rundir.StageFormat{Evidence: true, Score: rundir.ScoreSeconds, Proof: true}, Default: true, Companion: StageVerifierTime,
			Reads: "the decoded bundle and supplied solutions; runs the nop agent, the oracle (or a supplied solution) and the verifier in sandboxes",
			Help:  "verifier gate: the untouched env scores 0 in every run, the oracle or a supplied solution 1 (else kept as verifier_unproven); score: median test.sh seconds",
			New: func(o Options) (pipeline.Stage, error) {
				f := Flaky{Runner: o.Runner, Limits: o.Limits, Labels: o.Labels, Repeats: o.FlakyRepeats,
					NopRepeats: o.NopRepeats, NopSessions: o.NopSessions, Solutions: o.Solutions, RequireProof: o.RequireProof}
				if o.Prover != nil {
					p := *o.Prover
					p.Runner, p.Labels = o.Runner, o.Labels
					if err := p.Validate(); err != nil {
						return nil, err
					}
					f.Prover = p
				}
				return f, nil
			}},
		{Name: StageVerifierTime, Set: true, Format: rundir.StageFormat{Score: rundir.ScoreSeconds},
			Reads: "flaky's scores (median test.sh seconds) of the surviving tasks",
			Help:  "drop verifiers slow relative to the pool's median (joins flaky unless listed)",
			New:   func(Options) (pipeline.Stage, error) { return VerifierTime{}, nil }},
		{Name: StageCheat, Sandbox: true, Format: rundir.StageFormat{Evidence: true}, Default: true,
			Reads: "the instruction and the decoded bundle; runs generic cheating agents and the verifier in a sandbox",
			Help:  "drop verifiers that give reward 1 to an agent that only creates the named files, fills or prints placeholders",
			New: func(o Options) (pipeline.Stage, error) {
				return Cheat{Runner: o.Runner, Limits: o.Limits, Labels: o.Labels}, nil
			}},
		{Name: StageDifficulty, Sandbox: true, Format: rundir.StageFormat{Evidence: true, Score: rundir.ScoreRate}, WithPolicy: true,
			Reads: "the decoded bundle; runs k attempts of a policy in sandboxes",
			Help:  "keep tasks by a policy's pass rate over k attempts; score: the pass rate",
			New: func(o Options) (pipeline.Stage, error) {
				d := o.Difficulty
				d.Runner, d.Limits, d.Labels = o.Runner, o.Limits, o.Labels
				if err := d.Validate(); err != nil {
					return nil, err
				}
				return d, nil
			}},
		{Name: StageSelect, Set: true, Default: true, WholePool: true,
			Reads: "the surviving tasks' metadata (strata set by validate)",
			Help:  "keep exactly --target tasks, a seeded sample (stratified with --stratify-by)",
			New: func(o Options) (pipeline.Stage, error) {
				return Select{Target: o.Target, Seed: o.Seed, Stratified: o.StratifyBy != ""}, nil
			}},
	}
}

// LookupStage returns the table row of a stage name.
func LookupStage(name string) (StageSpec, bool) {
	for _, s := range Stages() {
		if s.Name == name {
			return s, true
		}
	}
	return StageSpec{}, false
}

// StageNames lists the stage names of the table, in the default order.
func StageNames() []string {
	var out []string
	for _, s := range Stages() {
		out = append(out, s.Name)
	}
	return out
}

// Layout is the run-directory format of every stage of the table.
func Layout() rundir.Layout {
	l := rundir.Layout{}
	for _, s := range Stages() {
		if s.Format != (rundir.StageFormat{}) {
			l[s.Name] = s.Format
		}
	}
	return l
}

// formatOf is the table's run-directory format of a stage.
func formatOf(name string) rundir.StageFormat {
	s, _ := LookupStage(name)
	return s.Format
}

// Format implements pipeline.Formatted.
func (*Env) Format() rundir.StageFormat { return formatOf(StageEnv) }

// Format implements pipeline.Formatted.
func (Flaky) Format() rundir.StageFormat { return formatOf(StageFlaky) }

// Format implements pipeline.Formatted.
func (VerifierTime) Format() rundir.StageFormat { return formatOf(StageVerifierTime) }

// Format implements pipeline.Formatted.
func (Cheat) Format() rundir.StageFormat { return formatOf(StageCheat) }

// Format implements pipeline.Formatted.
func (Difficulty) Format() rundir.StageFormat { return formatOf(StageDifficulty) }

// StagesHelp describes the stages, one per line, for the CLI's help.
func StagesHelp() string {
	var b strings.Builder
	for _, s := range Stages() {
		var tags []string
		if s.Default {
			tags = append(tags, "default")
		}
		if s.WithPolicy {
			tags = append(tags, "default with --policy")
		}
		if s.Sandbox {
			tags = append(tags, "sandboxes")
		}
		if s.Set {
			tags = append(tags, "whole set")
		}
		fmt.Fprintf(&b, "  %-14s %s [%s]\n", s.Name, s.Help, strings.Join(tags, ", "))
	}
	return b.String()
}
