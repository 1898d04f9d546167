package filters

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
)

// Lint check codes. Each is a reason code in decisions.jsonl.
const (
	LintTestsInImage    = "tests_in_image"
	LintSolutionInImage = "solution_in_image"
	LintNoRewardWrite   = "verifier_writes_no_reward"
	// LintVerifierNetwork: the verifier fetches from the network at verify
	// time where it will have none: the task says no-network, or the run's
	// sandboxes are offline (no --allow-network).
	LintVerifierNetwork = "verifier_uses_network"
	// LintVerifierDownloads: the verifier fetches from the network at
	// verify time, and both the task and the run allow it (Harbor's own
	// template installs uv and pytest that way): every verification
	// depends on a registry. Information.
	LintVerifierDownloads  = "verifier_downloads"
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
	// LintSharedSolutionFiles: solution/ files also in the image that
	// are not the oracle's secret (input data it ships a copy of,
	// unchanged files of a whole fixed project). Information.
	LintSharedSolutionFiles = "shared_solution_files"
	// LintDockerfileUnparsable: the Dockerfile (or the compose build)
	// cannot be read, so the leak checks could not run.
	LintDockerfileUnparsable = "dockerfile_unparsable"
	// LintCopyOutsideContext: a COPY/ADD source climbs out of the build
	// context ("../x").
	LintCopyOutsideContext = "copy_outside_context"
	// LintCopySourceMissing: a COPY/ADD source matches no file of the
	// build context (after .dockerignore).
	LintCopySourceMissing = "copy_source_missing"
	// LintRewardOutsideLogs: the only reward paths tests/ names are
	// absolute paths outside /logs/verifier (e.g. /app/reward.txt), where
	// Harbor never reads. A warning: a path built at run time can still
	// land there.
	LintRewardOutsideLogs = "reward_outside_verifier_logs"
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
		LintVerifierDownloads:    ActionWarn,
		LintOversizedFile:        ActionWarn,
		LintInstructionReveals:   ActionDrop,
		LintInstructionShows:     ActionWarn,
		LintNoSolution:           ActionWarn,
		LintSharedProjectTests:   ActionWarn,
		LintSharedSolutionFiles:  ActionWarn,
		LintDockerfileUnparsable: ActionWarn,
		LintCopyOutsideContext:   ActionWarn,
		LintCopySourceMissing:    ActionWarn,
		LintRewardOutsideLogs:    ActionWarn,
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
	// AllowNetwork: the run's sandboxes give a task the network it asks
	// for (--allow-network), so a verifier that downloads is only
	// reported (verifier_downloads) when its task allows the network.
	AllowNetwork bool
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
		{LintSharedSolutionFiles, img.solData},
	} {
		if len(f.details) > 0 {
			add(f.code, "%s", strings.Join(f.details, "; "))
		}
	}
	if !mentionsReward(b) {
		add(LintNoRewardWrite, "nothing under tests/ writes /logs/verifier/reward.txt or reward.json")
	} else if p := rewardOutsideLogs(b); len(p) > 0 {
		add(LintRewardOutsideLogs, "the verifier writes its reward only to %s; Harbor reads /logs/verifier/reward.txt or reward.json", strings.Join(p, ", "))
	}
	if cmd := networkCommand(b, info.TestScript); cmd != "" {
		mode := "public" // Harbor's default
		if info.Config != nil && info.Config.Environment.NetworkMode != "" {
			mode = info.Config.Environment.NetworkMode
		}
		switch {
		case mode == "no-network":
			add(LintVerifierNetwork, "%s runs %q at verify time, but task.toml gives the task no network (network_mode no-network)", info.TestScript, cmd)
		case !l.AllowNetwork:
			add(LintVerifierNetwork, "%s runs %q at verify time: the task allows the network (network_mode %s), but this run's sandboxes are offline (--allow-network gives it)", info.TestScript, cmd, mode)
		default:
			add(LintVerifierDownloads, "%s runs %q at verify time: every verification fetches from the network (network_mode %s)", info.TestScript, cmd, mode)
		}
	}
	for _, name := range b.Names {
		if f := b.Files[name]; f.Kind == bundle.KindFile && f.Size > l.MaxFileBytes {
			add(LintOversizedFile, "%s is %d bytes (limit %d)", name, f.Size, l.MaxFileBytes)
			break
		}
	}
	if shown, total := revealedAssertions(b); total > 0 && float64(shown) >= l.RevealShare*float64(total) && (shown >= 3 || shown == total) {
		add(LintInstructionReveals, "instruction.md shows %d of the %d expected outputs the tests compare against", shown, total)
	} else if total > 0 && shown >= 3 && 10*shown >= 6*total {
		add(LintInstructionShows, "instruction.md shows %d of the %d expected outputs the tests compare against (the others stay hidden)", shown, total)
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
// reward files (test.sh may delegate the write to a helper). Folders have
// no content and are skipped; a hard link is read through its target. Only
// a file whose content was not retained (too large), or a symlink (its
// target may lie outside the bundle), counts as a mention: do not guess.
func mentionsReward(b *bundle.Bundle) bool {
	for _, name := range b.Names {
		if !strings.HasPrefix(name, "tests/") {
			continue
		}
		var data []byte
		var ok bool
		switch f := b.Files[name]; f.Kind {
		case bundle.KindDir:
			continue
		case bundle.KindFile:
			data, ok = b.Data(name)
		case bundle.KindHardlink:
			data, ok = b.Data(f.Linkname)
		}
		if !ok {
			return true // not retained, or a symlink: do not guess
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
// needs the network, or "". An install told not to fetch (pip's
// --no-index, uv's and npm's --offline: packages from a wheelhouse or
// cache in the image) does not, nor does a curl or wget of this machine
// (a verifier polling the server it started:
// http://127.0.0.1:PORT/health, directly or through a variable the
// script sets).
func networkCommand(b *bundle.Bundle, script string) string {
	data, ok := b.Data(script)
	if !ok {
		return ""
	}
	text := string(data)
	var vars map[string]string
	for _, m := range networkCmd.FindAllStringSubmatchIndex(text, -1) {
		cmd := strings.TrimSpace(text[m[2]:m[3]])
		line, _, _ := strings.Cut(text[m[0]:], "\n") // a match starts its line
		if offlineFlag.MatchString(line) {
			continue // an installer told not to fetch (a wheelhouse in the image)
		}
		if cmd == "curl" || cmd == "wget" {
			if vars == nil {
				vars = shellAssignments(text)
			}
			if fetchesLocalOnly(line, vars) {
				continue
			}
		}
		return cmd
	}
	return ""
}

var (
	offlineFlag = regexp.MustCompile(`\s--(?:no-index|offline)(?:\s|$)`)
	urlHost     = regexp.MustCompile(`\b(?:https?|ftp)://(\[[^\]]*\]|[^/\s:"'$\\]+)`)
	shellAssig  = regexp.MustCompile(`(?m)^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_]\w*)=("[^"\n]*"|'[^'\n]*'|\S*)`)
)

// shellAssignments are the script's NAME=value assignments (the last
// of each name), quotes removed.
func shellAssignments(text string) map[string]string {
	vars := map[string]string{}
	for _, m := range shellAssig.FindAllStringSubmatch(text, -1) {
		vars[m[1]] = strings.Trim(m[2], `"'`)
	}
	return vars
}

// fetchesLocalOnly reports whether a curl or wget line reaches only this
// machine: every URL on it (after substituting the script's variables
// once) names localhost or a loopback address. A line with no URL to
// read counts as reaching out.
func fetchesLocalOnly(line string, vars map[string]string) bool {
	line = os.Expand(line, func(name string) string {
		if val, ok := vars[name]; ok {
			return val
		}
		return "${" + name + "}" // unknown: as written
	})
	hosts := urlHost.FindAllStringSubmatch(line, -1)
	if len(hosts) == 0 {
		return false
	}
	for _, h := range hosts {
		host := strings.ToLower(strings.Trim(h[1], "[]"))
		if host == "localhost" {
			continue
		}
		if ip, err := netip.ParseAddr(host); err != nil || !(ip.IsLoopback() || ip.IsUnspecified()) {
			return false
		}
	}
	return true
}

var (
	assertCall = regexp.MustCompile(`^\s*assert\s+[\w.]+\((.*)\)\s*==\s*(.+?)\s*$`)
	hasLiteral = regexp.MustCompile(`["'\[{]|\d`)
	// assertAgainstName: an equality assertion against a variable, the
	// shape that consumes a table of (arguments, expected) rows.
	assertAgainstName = regexp.MustCompile(`(?m)^\s*assert\s+.*==\s*[A-Za-z_]\w*\s*(,.*)?$`)
	// literalValue: a Python literal (number, string, list, tuple, dict
	// or set), not a name or an expression.
	literalValue = regexp.MustCompile(`^(True|False|None|-?\d[\d_.eE+-]*|[rbfu]?"[^"]*"|[rbfu]?'[^']*'|\[.*\]|\(.*\)|\{.*\})$`)
	// fileOrFlag: a string literal naming a file, a path or a CLI flag,
	// which an instruction legitimately specifies.
	fileOrFlag = regexp.MustCompile(`^["'](/|-|\./)|^["'][\w./-]+\.[A-Za-z]\w{0,4}["']$`)
)

// trivialValues are expected values that reveal nothing.
var trivialValues = map[string]bool{"True": true, "False": true, "None": true, "0": true, "1": true, "-1": true,
	"0.0": true, "1.0": true, `""`: true, "''": true, "[]": true, "()": true, "{}": true}

// testCase recognises one Python test case on a line, an
// `assert f(ARGS) == VALUE` or (when rows=true) a row `((ARGS), VALUE),`
// of a table the tests compare against, and returns its arguments and
// its expected value (a literal, not a name), whitespace squashed.
// answer says whether the value is one the agent would otherwise have to
// compute: not a file name, path or CLI flag, and without arguments not a
// trivial value (True, 0, []...); only answers count, revealed or hidden.
// (A value equal to an argument, f(x) == x, is revealed only with its
// arguments, as any case is.) Cases whose parts are both shorter than 3
// characters are skipped: they would match any text.
func testCase(line string, rows bool) (args, val string, answer, ok bool) {
	if m := assertCall.FindStringSubmatch(line); m != nil {
		args, val = m[1], m[2]
	} else {
		if !rows {
			return "", "", false, false
		}
		t := strings.TrimSpace(line)
		t = strings.TrimSuffix(t, ",")
		if !strings.HasPrefix(t, "(") || !strings.HasSuffix(t, ")") {
			return "", "", false, false
		}
		inner := t[1 : len(t)-1]
		i := lastTopLevelComma(inner)
		if i < 0 {
			return "", "", false, false
		}
		args, val = inner[:i], inner[i+1:]
		args = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(args), "("), ")")
		args = strings.TrimSuffix(strings.TrimSpace(args), ",")
	}
	args, val = squash(args), squash(val)
	if !literalValue.MatchString(val) || len(args) < 3 && len(val) < 3 {
		return "", "", false, false
	}
	answer = !fileOrFlag.MatchString(val) && !(len(args) < 3 && trivialValues[val])
	return args, val, answer, true
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

// revealedAssertions estimates how many of the answers the tests
// compare against the instruction shows: Python test cases (see
// testCase) whose expected value, and arguments if any, appear in
// instruction.md, the value other than as a stated limit ("below 50.0");
// and lines of expected-output files that appear there as lines.
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
	in := func(part string) bool {
		return containsToken(flat, part) || len(part) >= 3 && strings.Contains(flat, part)
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
			rows := assertAgainstName.Match(data)
			for _, line := range strings.Split(string(data), "\n") {
				args, val, answer, ok := testCase(line, rows)
				if !ok {
					continue
				}
				if !answer {
					continue // neither revealed nor hidden: nothing to compute
				}
				total++
				if (args == "" || in(args)) && in(val) && !onlyAsLimit(flat, val) {
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

// limitWords, right before a value, make it a requirement, not an
// answer: "below 50.0", "at most 3", "< 1e-6", "less than 2".
var limitWords = []string{"below", "under", "than", "at most", "at least", "exceed", "exceeds", "within", "tolerance",
	"threshold", "max", "maximum", "min", "minimum", "up to", "limit", "above", "<", ">", "<=", ">=", "≤", "≥"}

// limitFillers may stand between a limit word and its value.
var limitFillers = []string{"of", "is", "=", ":", "be", "a", "`", "**"}

// onlyAsLimit reports whether every occurrence of val (as a token) in
// the instruction directly follows a limit word: a requirement the tests
// check, not an output they compare against.
func onlyAsLimit(flat, val string) bool {
	lower := strings.ToLower(flat)
	found := false
	for i := 0; i < len(flat); {
		j := strings.Index(flat[i:], val)
		if j < 0 {
			break
		}
		start, end := i+j, i+j+len(val)
		i = start + 1
		if start > 0 && isWord(flat[start-1]) || end < len(flat) && isWord(flat[end]) {
			continue
		}
		found = true
		if !afterLimitWord(lower[:start]) {
			return false
		}
	}
	return found
}

// afterLimitWord reports whether text ends with a limit word, fillers
// and spaces aside.
func afterLimitWord(text string) bool {
	fields := strings.Fields(text)
	for len(fields) > 0 && slices.Contains(limitFillers, fields[len(fields)-1]) {
		fields = fields[:len(fields)-1]
	}
	if len(fields) == 0 {
		return false
	}
	last := strings.Trim(fields[len(fields)-1], "`*_,(")
	if slices.Contains(limitWords, last) {
		return true
	}
	if len(fields) >= 2 {
		two := fields[len(fields)-2] + " " + last
		return slices.Contains(limitWords, two)
	}
	return false
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

// rewardPath matches a reward file name and the path-like characters
// written right before it ("/app/reward.txt", "$DIR/reward.json").
var rewardPath = regexp.MustCompile(`[A-Za-z0-9_./${}\-]*reward\.(?:txt|json)`)

// rewardOutsideLogs returns the reward paths the files under tests/ name
// when every one of them is an absolute path outside /logs/verifier and
// "/logs/verifier" appears in none of those files (a `cd /logs/verifier`,
// a LOG_DIR=/logs/verifier or a Path("/logs/verifier") would join it to a
// relative or variable name). Harbor reads the reward only from
// /logs/verifier, so such a verifier scores nothing; a relative or
// variable path, or a file lint cannot read, gives no answer (nil).
func rewardOutsideLogs(b *bundle.Bundle) []string {
	var paths []string
	for _, name := range b.Names {
		if !strings.HasPrefix(name, "tests/") || b.Files[name].Kind == bundle.KindDir {
			continue
		}
		data, ok := b.Data(name)
		if !ok {
			return nil
		}
		s := string(data)
		if strings.Contains(s, "/logs/verifier") {
			return nil
		}
		for _, m := range rewardPath.FindAllString(s, -1) {
			if !strings.HasPrefix(m, "/") || strings.ContainsAny(m, "${}") {
				return nil
			}
			if !slices.Contains(paths, m) {
				paths = append(paths, m)
			}
		}
	}
	return paths
}
