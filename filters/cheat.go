package filters

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/trial"
)

// Reasons of the cheat stage.
const (
	// ReasonVerifierAcceptsTrivial drops a task whose verifier gave a
	// cheating agent reward 1.
	ReasonVerifierAcceptsTrivial = "verifier_accepts_trivial"
	// ReasonCheatsRejected keeps a task whose verifier gave every cheat 0.
	ReasonCheatsRejected = "cheats_rejected"
	// ReasonNoCheatTargets keeps a task whose instruction names no file or
	// folder: there is nothing generic to fake, no sandbox runs.
	ReasonNoCheatTargets = "no_paths_named"
	// ReasonCheatUnscored keeps a task whose verifier did not score the
	// cheat (a task defect such as reward_missing: flaky judges those).
	ReasonCheatUnscored = "cheat_unscored"
)

// CheatLevel is how far a cheating agent goes. Each level does what the
// lower ones do and more; none reads the task's tests. The fourth
// generic cheat, "exit at once", is the nop agent the flaky stage already
// runs, so it is not repeated here.
type CheatLevel int

// Cheat levels.
const (
	// CheatTouch creates every file and folder the instruction names
	// (InstructionPaths) that does not exist yet, files empty.
	CheatTouch CheatLevel = iota + 1
	// CheatPlausible fills the files it created with plausible content
	// by extension (plausibleContent): {} for JSON, a header for CSV, an
	// empty archive for .tar.gz, the instruction's numbers for text.
	CheatPlausible
	// CheatEcho also prints expected-looking output: the instruction's
	// numbers and double-quoted strings, on stdout and into
	// /logs/agent/cheat.txt.
	CheatEcho
)

// String names the level as evidence does.
func (l CheatLevel) String() string {
	switch l {
	case CheatTouch:
		return "touch"
	case CheatPlausible:
		return "plausible"
	case CheatEcho:
		return "echo"
	}
	return fmt.Sprintf("cheat%d", int(l))
}

// CheatActor is a generic cheating agent (a trial.Actor): it knows the
// instruction's text and nothing of tests/. It never changes a file or
// folder that already exists, so the task's inputs stay as they were.
type CheatActor struct {
	Level       CheatLevel
	Targets     []CheatTarget
	Instruction string
}

// CheatRecord is a CheatActor's trajectory: what it created and printed.
type CheatRecord struct {
	Level   CheatLevel
	Created []string // "file PATH" or "dir PATH", as the sandbox reported them
	Printed []string
}

// Name is "cheat-<level>".
func (a CheatActor) Name() string { return "cheat-" + a.Level.String() }

// Act runs the cheat as one shell command as the task's agent user, in
// the sandbox's working directory (relative paths resolve there).
func (a CheatActor) Act(ctx context.Context, sb sandbox.Sandbox, t *trial.Task) (trial.ActReport, error) {
	script, printed := a.script()
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: script, User: t.Info.Config.Agent.User, Timeout: time.Minute, MaxOutput: 64 << 10})
	if err != nil {
		return trial.ActReport{}, fmt.Errorf("running the %s cheat: %w", a.Level, err)
	}
	rec := CheatRecord{Level: a.Level, Printed: printed}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "@@cheat "); ok {
			rec.Created = append(rec.Created, line)
		}
	}
	code := res.ExitCode
	return trial.ActReport{Trajectory: rec, Exit: &code, TimedOut: res.TimedOut,
		Detail: fmt.Sprintf("%s cheat created %d of %d named paths", a.Level, len(rec.Created), len(a.Targets))}, nil
}

// script is the cheat's shell command and what it prints (CheatEcho).
func (a CheatActor) script() (string, []string) {
	var b strings.Builder
	numbers := instructionNumbers(a.Instruction)
	for _, tg := range a.Targets {
		p := shellQuote(tg.Path)
		if tg.Dir {
			fmt.Fprintf(&b, "[ -e %s ] || { mkdir -p -- %s 2>/dev/null && echo '@@cheat dir '%s; }\n", p, p, p)
			continue
		}
		write := ": > " + p
		if a.Level >= CheatPlausible {
			switch content, archive := plausibleContent(tg.Path, numbers); {
			case archive != "":
				write = "{ " + fmt.Sprintf(archive, p) + " || : > " + p + "; }"
			case content != "":
				write = "printf '%s' " + shellQuote(content) + " > " + p
				if path.Ext(tg.Path) == ".sh" {
					write += " && chmod +x " + p
				}
			}
		}
		fmt.Fprintf(&b, "[ -e %s ] || { mkdir -p -- \"$(dirname -- %s)\" 2>/dev/null; %s 2>/dev/null && echo '@@cheat file '%s; }\n", p, p, write, p)
	}
	var printed []string
	if a.Level >= CheatEcho {
		printed = append(instructionNumbers(a.Instruction), instructionQuotes(a.Instruction)...)
		out := shellQuote(strings.Join(printed, "\n") + "\n")
		fmt.Fprintf(&b, "printf '%%s' %s; mkdir -p /logs/agent 2>/dev/null; printf '%%s' %s > /logs/agent/cheat.txt 2>/dev/null\n", out, out)
	}
	b.WriteString("exit 0\n")
	return b.String(), printed
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Cheat is the stage that drops verifiers accepting trivial work. It runs
// the cheats cumulatively in one sandbox session (touch, plausible and
// echo applied together, then the verifier once): every cheat only adds
// to the last, so an honest verifier that rejects the combined state is
// judged with one start, one act and one verify. When the verifier gives
// it reward 1, the weaker cheats are tried in fresh sandboxes to name the
// weakest one that passes (drops only, so honest tasks do not pay for it).
// The images are the ones env and flaky built (cached).
type Cheat struct {
	Runner    *trial.Runner
	Limits    bundle.Limits
	Labels    map[string]string
	MaxVerify time.Duration // verifier timeout cap; default 60 s (flaky's 3× its slow-verifier limit)
}

// Name implements pipeline.Stage.
func (Cheat) Name() string { return StageCheat }

// Expensive implements pipeline.Expensive: cheat outcomes go to the ledger.
func (Cheat) Expensive() {}

// Fingerprint implements pipeline.Fingerprinted.
func (s Cheat) Fingerprint() string {
	return fmt.Sprintf("cheat/v1 levels=touch,plausible,echo verifier<=%s", s.maxVerify()) + s.Runner.SettingsKey()
}

func (s Cheat) maxVerify() time.Duration {
	if s.MaxVerify <= 0 {
		return time.Minute
	}
	return s.MaxVerify
}

// Process implements pipeline.ItemStage.
func (s Cheat) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	var sp spend
	return sp.attach(s.decide(ctx, it, &sp))
}

func (s Cheat) decide(ctx context.Context, it *pipeline.Item, sp *spend) pipeline.Outcome {
	t, err := runnableTask(it, s.Limits)
	if err != nil {
		return pipeline.ErrorOutcome(ReasonTaskUnloadable, err.Error())
	}
	instr, _ := t.Bundle.Data("instruction.md")
	targets := InstructionPaths(string(instr))
	if len(targets) == 0 {
		return pipeline.KeepOutcome(ReasonNoCheatTargets, "the instruction names no file or folder to create; no cheat ran (0 sandboxes)")
	}
	run := func(level CheatLevel) (trial.Result, *pipeline.Outcome) {
		res, err := s.Runner.Run(ctx, t, trial.Options{
			Actor:   CheatActor{Level: level, Targets: targets, Instruction: string(instr)},
			Repeats: 1, Labels: s.Labels, VerifierTimeoutCap: s.maxVerify(),
		})
		if err != nil {
			out := pipeline.ErrorOutcome(ReasonStageInterrupted, err.Error())
			return trial.Result{}, &out
		}
		sp.add(res)
		if r := res[0]; r.Infra() {
			out := pipeline.ErrorOutcome(string(r.Outcome), r.Detail)
			return r, &out
		}
		return res[0], nil
	}
	r, stop := run(CheatEcho)
	if stop != nil {
		return *stop
	}
	switch {
	case r.TaskDefect():
		return pipeline.KeepOutcome(ReasonCheatUnscored, fmt.Sprintf(
			"the verifier did not score the cheat (%s: %s); flaky judges task defects", r.Outcome, r.Detail))
	case !r.Passed():
		return pipeline.KeepOutcome(ReasonCheatsRejected, fmt.Sprintf(
			"touch, plausible and echo cheats together scored %g; %s", reward(r), createdSummary(r, len(targets))))
	}
	// The combined cheat passed: name the weakest cheat that does.
	passed := r
	for _, level := range []CheatLevel{CheatTouch, CheatPlausible} {
		w, stop := run(level)
		if stop != nil {
			return *stop
		}
		if w.Passed() {
			passed = w
			break
		}
	}
	// The evidence's log is the passing run's test output, not that of a
	// weaker cheat tried after it.
	sp.ev.Log = passed.Log
	rec, _ := passed.Trajectory.(CheatRecord)
	what := map[CheatLevel]string{
		CheatTouch:     "the touch cheat (every named path created empty)",
		CheatPlausible: "the plausible cheat (named paths created with placeholder content)",
		CheatEcho:      "the echo cheat (plausible files plus the instruction's numbers and quotes printed)",
	}[rec.Level]
	return pipeline.DropOutcome(ReasonVerifierAcceptsTrivial, fmt.Sprintf(
		"the verifier gave %s reward %g without any work; %s", what, reward(passed), createdSummary(passed, len(targets))))
}

func reward(r trial.Result) float64 {
	if r.Reward == nil {
		return 0
	}
	return *r.Reward
}

// createdSummary names what a cheat created (at most 8 paths).
func createdSummary(r trial.Result, named int) string {
	rec, _ := r.Trajectory.(CheatRecord)
	if len(rec.Created) == 0 {
		return fmt.Sprintf("it created none of the %d named paths (all existed or were not writable)", named)
	}
	list := rec.Created
	more := ""
	if len(list) > 8 {
		list, more = list[:8], fmt.Sprintf(", and %d more", len(list)-8)
	}
	return fmt.Sprintf("it created %d of %d named paths: %s%s", len(rec.Created), named, strings.Join(list, ", "), more)
}
