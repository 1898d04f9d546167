package filters

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
)

// Lint check codes. Each is a reason code in decisions.jsonl.
const (
	LintTestsInImage       = "tests_in_image"
	LintSolutionInImage    = "solution_in_image"
	LintNoRewardWrite      = "verifier_writes_no_reward"
	LintVerifierNetwork    = "verifier_uses_network"
	LintOversizedFile      = "oversized_file"
	LintInstructionReveals = "instruction_reveals_tests"
	// LintInstructionShows: most (not all) test values appear in the
	// instruction, typically as examples; a hard-coded answer still fails
	// the hidden ones.
	LintInstructionShows = "instruction_shows_test_values"
	LintNoSolution       = "no_solution"
	// LintSharedProjectTests: verifier files other than its entry files
	// are also in the image (the project's own tests, re-run by the
	// verifier by design). Information, not a leak.
	LintSharedProjectTests = "shared_project_tests"
	// LintSharedSolutionData: a data file of solution/ is also in the
	// image (input data the oracle ships a copy of). Information.
	LintSharedSolutionData = "shared_solution_data"
	// LintDockerfileUnparsable: the Dockerfile (or the compose build)
	// cannot be read, so the leak checks could not run.
	LintDockerfileUnparsable = "dockerfile_unparsable"
	// LintCopyOutsideContext: a COPY/ADD source climbs out of the build
	// context ("../x").
	LintCopyOutsideContext = "copy_outside_context"
	// LintCopySourceMissing: a COPY/ADD source matches no file of the
	// build context (after .dockerignore).
	LintCopySourceMissing = "copy_source_missing"
)

// Keep reasons of the lint stage.
const (
	ReasonLintClean    = "clean"
	ReasonLintWarnings = "warnings"
)

// Action is what a lint finding does to the task.
type Action string

// Actions.
const (
	ActionDrop Action = "drop"
	ActionWarn Action = "warn"
	ActionOff  Action = "off"
)

// DefaultLintActions: a finding that makes the reward untrustworthy or the
// task unusable offline drops it; size is only a warning. no_solution is
// a warning: RL pools ship no solutions, and the verifier gate has an
// oracle-free path. A Dockerfile lint cannot read, or a COPY source that
// is outside the context or missing, is a warning: Docker fails such a
// build and the sandbox stages drop the task with the engine's own
// message, while a static parser that is stricter than Docker's must not
// drop a task that builds.
func DefaultLintActions() map[string]Action {
	return map[string]Action{
		LintTestsInImage:         ActionDrop,
		LintSolutionInImage:      ActionDrop,
		LintNoRewardWrite:        ActionDrop,
		LintVerifierNetwork:      ActionDrop,
		LintOversizedFile:        ActionWarn,
		LintInstructionReveals:   ActionDrop,
		LintInstructionShows:     ActionWarn,
		LintNoSolution:           ActionWarn,
		LintSharedProjectTests:   ActionWarn,
		LintSharedSolutionData:   ActionWarn,
		LintDockerfileUnparsable: ActionWarn,
		LintCopyOutsideContext:   ActionWarn,
		LintCopySourceMissing:    ActionWarn,
	}
}

// ParseLintActions applies "check=action,..." to the defaults.
func ParseLintActions(spec string) (map[string]Action, error) {
	acts := DefaultLintActions()
	if strings.TrimSpace(spec) == "" {
		return acts, nil
	}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("lint: %q is not check=drop|warn|off", part)
		}
		if _, known := acts[k]; !known {
			return nil, fmt.Errorf("lint: unknown check %q (checks: %s)", k, strings.Join(lintChecks(), ", "))
		}
		switch a := Action(v); a {
		case ActionDrop, ActionWarn, ActionOff:
			acts[k] = a
		default:
			return nil, fmt.Errorf("lint: %s=%s: action must be drop, warn or off", k, v)
		}
	}
	return acts, nil
}

func lintChecks() []string {
	var out []string
	for k := range DefaultLintActions() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Lint is the static stage: it reads the bundle, runs nothing.
type Lint struct {
	Actions      map[string]Action
	MaxFileBytes int64   // oversized_file threshold; default 1 MiB (Terminal-Bench's rule)
	RevealShare  float64 // instruction_reveals_tests: share of test cases visible in the instruction; default 1 (a hard-coded answer passes every test)
}

// Name implements pipeline.Stage.
func (Lint) Name() string { return StageLint }

type finding struct {
	code   string
	detail string
}

// Process implements pipeline.ItemStage.
func (l Lint) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	if l.Actions == nil {
		l.Actions = DefaultLintActions()
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = 1 << 20
	}
	if l.RevealShare <= 0 {
		l.RevealShare = 1
	}
	b, info := it.Bundle, it.Info
	var found []finding
	add := func(code, format string, args ...any) {
		if l.Actions[code] != ActionOff && l.Actions[code] != "" {
			found = append(found, finding{code, fmt.Sprintf(format, args...)})
		}
	}
	img := imageLeaks(b, info)
	for _, f := range []struct {
		code    string
		details []string
	}{
		{LintTestsInImage, img.tests},
		{LintSolutionInImage, img.solution},
		{LintDockerfileUnparsable, nonNil(img.unparsable)},
		{LintCopyOutsideContext, img.outside},
		{LintCopySourceMissing, img.missing},
		{LintSharedProjectTests, img.shared},
		{LintSharedSolutionData, img.solData},
	} {
		if len(f.details) > 0 {
			add(f.code, "%s", strings.Join(f.details, "; "))
		}
	}
	if !mentionsReward(b) {
		add(LintNoRewardWrite, "nothing under tests/ writes /logs/verifier/reward.txt or reward.json")
	}
	if cmd := networkCommand(b, info.TestScript); cmd != "" {
		add(LintVerifierNetwork, "%s runs %q at verify time (sandboxes are offline)", info.TestScript, cmd)
	}
	for _, name := range b.Names {
		if f := b.Files[name]; f.Kind == bundle.KindFile && f.Size > l.MaxFileBytes {
			add(LintOversizedFile, "%s is %d bytes (limit %d)", name, f.Size, l.MaxFileBytes)
			break
		}
	}
	if shown, total := revealedAssertions(b); total > 0 && float64(shown) >= l.RevealShare*float64(total) && (shown >= 3 || shown == total) {
		add(LintInstructionReveals, "instruction.md shows %d of the %d values the tests check", shown, total)
	} else if total > 0 && shown >= 3 && 10*shown >= 6*total {
		add(LintInstructionShows, "instruction.md shows %d of the %d values the tests check (the others stay hidden)", shown, total)
	}
	if !info.HasSolution {
		add(LintNoSolution, "no solution/solve.sh: the verifier gate takes its oracle-free path")
	}

	var flags, details []string
	drop := ""
	for _, f := range found {
		flags = append(flags, f.code)
		details = append(details, f.code+": "+f.detail)
		if drop == "" && l.Actions[f.code] == ActionDrop {
			drop = f.code
		}
	}
	detail := strings.Join(details, "; ")
	switch {
	case drop != "":
		out := pipeline.DropOutcome(drop, detail)
		out.Flags = flags
		return out
	case len(found) > 0:
		out := pipeline.KeepOutcome(ReasonLintWarnings, detail)
		out.Flags = flags
		return out
	}
	return pipeline.KeepOutcome(ReasonLintClean, "")
}

func nonNil(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// mentionsReward reports whether any file under tests/ refers to the
// reward files (test.sh may delegate the write to a helper).
func mentionsReward(b *bundle.Bundle) bool {
	for _, name := range b.Names {
		if !strings.HasPrefix(name, "tests/") {
			continue
		}
		data, ok := b.Data(name)
		if !ok {
			return true // not retained: do not guess
		}
		s := string(data)
		if strings.Contains(s, "reward.txt") || strings.Contains(s, "reward.json") || strings.Contains(s, "/logs/verifier/reward") {
			return true
		}
	}
	return false
}

var networkCmd = regexp.MustCompile(`(?m)^[^#\n]*?\b(curl\s|wget\s|pip3?\s+install|uv\s+(pip\s+install|add|sync|tool\s+install)|uvx\s|apt(-get)?\s+(install|update)|apk\s+add|npm\s+(install|i)\s|git\s+clone)`)

// networkCommand returns the first command in the verifier script that
// needs the network, or "".
func networkCommand(b *bundle.Bundle, script string) string {
	data, ok := b.Data(script)
	if !ok {
		return ""
	}
	if m := networkCmd.FindStringSubmatch(string(data)); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

var (
	assertCall = regexp.MustCompile(`^\s*assert\s+[\w.]+\((.*)\)\s*==\s*(.+?)\s*$`)
	hasLiteral = regexp.MustCompile(`["'\[{]|\d`)
)

// testCase recognises one Python test case on a line, an
// `assert f(ARGS) == VALUE` or a row `((ARGS), VALUE),` of a parametrised
// table, and returns its parts (arguments and value, whitespace squashed).
// Cases whose parts are all shorter than 3 characters are skipped: they
// would match any text.
func testCase(line string) ([]string, bool) {
	var args, val string
	if m := assertCall.FindStringSubmatch(line); m != nil {
		args, val = m[1], m[2]
	} else {
		t := strings.TrimSpace(line)
		t = strings.TrimSuffix(t, ",")
		if !strings.HasPrefix(t, "(") || !strings.HasSuffix(t, ")") {
			return nil, false
		}
		inner := t[1 : len(t)-1]
		i := lastTopLevelComma(inner)
		if i < 0 {
			return nil, false
		}
		args, val = inner[:i], inner[i+1:]
		args = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(args), "("), ")")
		args = strings.TrimSuffix(strings.TrimSpace(args), ",")
	}
	args, val = squash(args), squash(val)
	if !hasLiteral.MatchString(args) && !hasLiteral.MatchString(val) {
		return nil, false // e.g. assert f(*args) == expected
	}
	if len(args) < 3 && len(val) < 3 {
		return nil, false
	}
	var parts []string
	for _, p := range []string{args, val} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return parts, true
}

// lastTopLevelComma finds the last comma outside brackets and quotes.
func lastTopLevelComma(s string) int {
	depth, last := 0, -1
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			last = i
		}
	}
	return last
}

// revealedAssertions estimates how much of what the tests check the
// instruction shows: Python test cases (see testCase) whose arguments and
// expected value both appear in instruction.md, and lines of
// expected-output files that appear there as lines.
func revealedAssertions(b *bundle.Bundle) (shown, total int) {
	instr, ok := b.Data("instruction.md")
	if !ok {
		return 0, 0
	}
	text := string(instr)
	flat := squash(text)
	lines := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		lines[squash(l)] = true
	}
	for _, name := range b.Names {
		if !strings.HasPrefix(name, "tests/") {
			continue
		}
		data, ok := b.Data(name)
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".py"):
			for _, line := range strings.Split(string(data), "\n") {
				parts, ok := testCase(line)
				if !ok {
					continue
				}
				total++
				all := true
				for _, part := range parts {
					all = all && (containsToken(flat, part) || len(part) >= 3 && strings.Contains(flat, part))
				}
				if all {
					shown++
				}
			}
		case strings.Contains(path.Base(name), "expected"):
			for _, line := range strings.Split(string(data), "\n") {
				if line = squash(line); line == "" {
					continue
				}
				total++
				if lines[line] {
					shown++
				}
			}
		}
	}
	return shown, total
}

// containsToken finds needle in text not glued to other word characters,
// so "12" does not match inside "2012".
func containsToken(text, needle string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], needle)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(needle)
		if (start == 0 || !isWord(text[start-1])) && (end == len(text) || !isWord(text[end])) {
			return true
		}
		i = start + 1
	}
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// squash collapses whitespace so formatting differences do not hide a
// match.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
