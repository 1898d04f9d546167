package poolgen

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/otcurate/otcurate/bundle"
)

// draft is a task before packing: the files of a task directory plus what
// the label needs. Defects are applied to drafts (or to the packed entries
// for the structural kinds, or to the bytes for the codec kinds).
type draft struct {
	family, template, dockerID string

	instruction string
	taskToml    string
	dockerfile  string
	env         map[string]string // other files under environment/
	tests       map[string]string // files under tests/ other than test.sh
	testSh      string
	solveSh     string            // "" means no solution/ directory
	solution    map[string]string // other files under solution/

	// What the builders know and the defects need.
	verifier verifierSpec
}

func (d *draft) entries() []bundle.Entry {
	var out []bundle.Entry
	add := func(name, data string, mode fs.FileMode) {
		out = append(out, bundle.Entry{Name: name, Kind: bundle.KindFile, Mode: mode, Data: []byte(data)})
	}
	add("instruction.md", d.instruction, 0o644)
	add("task.toml", d.taskToml, 0o644)
	add("environment/Dockerfile", d.dockerfile, 0o644)
	for _, k := range sortedKeys(d.env) {
		add("environment/"+k, d.env[k], 0o644)
	}
	add("tests/test.sh", d.testSh, 0o755)
	for _, k := range sortedKeys(d.tests) {
		add("tests/"+k, d.tests[k], 0o644)
	}
	if d.solveSh != "" {
		add("solution/solve.sh", d.solveSh, 0o755)
		for _, k := range sortedKeys(d.solution) {
			add("solution/"+k, d.solution[k], 0o644)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ---- task.toml ----

type tomlMeta struct {
	difficulty, category string
	tags                 []string
}

var schemaLines = []string{`version = "1.0"`, `schema_version = "1.1"`, `schema_version = "1.2"`, `schema_version = "1.3"`, `schema_version = "1.4"`}

// genTaskToml writes a task.toml whose shape varies like real pools do:
// schema 1.0-1.4 (the 1.0 form uses the `version` alias), timeouts written
// as floats or ints, an [environment] table that is sometimes omitted (so
// the defaults apply) or uses the deprecated memory/storage strings.
func genTaskToml(r *rand.Rand, m tomlMeta, name string) string {
	var b strings.Builder
	schema := r.IntN(len(schemaLines))
	b.WriteString(schemaLines[schema] + "\n")
	if schema == 4 && chance(r, 0.3) {
		fmt.Fprintf(&b, "\n[task]\nname = \"poolgen/%s\"\ndescription = \"\"\nauthors = []\nkeywords = []\n", name)
	}
	b.WriteString("\n[metadata]\n")
	if chance(r, 0.5) {
		b.WriteString("author_name = \"poolgen\"\n")
	}
	fmt.Fprintf(&b, "difficulty = %q\ncategory = %q\n", m.difficulty, m.category)
	quoted := make([]string, len(m.tags))
	for i, t := range m.tags {
		quoted[i] = fmt.Sprintf("%q", t)
	}
	fmt.Fprintf(&b, "tags = [%s]\n", strings.Join(quoted, ", "))
	num := func(v int) string {
		if chance(r, 0.6) {
			return fmt.Sprintf("%d.0", v)
		}
		return fmt.Sprint(v)
	}
	fmt.Fprintf(&b, "\n[verifier]\ntimeout_sec = %s\n", num(pick(r, []int{120, 300, 600, 600, 720})))
	if chance(r, 0.9) {
		fmt.Fprintf(&b, "\n[agent]\ntimeout_sec = %s\n", num(pick(r, []int{120, 600, 600, 900, 1800})))
	}
	switch k := r.IntN(10); {
	case k < 3:
		// no [environment]: defaults apply
	case k < 4:
		b.WriteString("\n[environment]\nbuild_timeout_sec = 600.0\ncpus = 1\nmemory = \"2G\"\nstorage = \"10G\"\n")
	default:
		fmt.Fprintf(&b, "\n[environment]\nbuild_timeout_sec = %s\ncpus = %d\nmemory_mb = %d\nstorage_mb = 10240\n",
			num(pick(r, []int{600, 600, 900, 1800})), pick(r, []int{1, 1, 2}), pick(r, []int{2048, 2048, 4096}))
		if chance(r, 0.3) {
			if schema >= 3 {
				b.WriteString("network_mode = \"no-network\"\n")
			} else {
				b.WriteString("allow_internet = false\n")
			}
		}
	}
	return b.String()
}

// breakTaskToml makes a task.toml invalid, by a syntax error or by a wrong
// value type. It returns the new text and the mode.
func breakTaskToml(r *rand.Rand, text string) (string, string) {
	lines := strings.Split(text, "\n")
	find := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		return -1
	}
	vt := find("[verifier]") + 1 // the timeout_sec line of [verifier]
	switch mode := pick(r, []string{"unclosed_table", "unterminated_string", "duplicate_key", "missing_value", "string_timeout", "string_timeout"}); mode {
	case "unclosed_table":
		lines[vt-1] = "[verifier"
		return strings.Join(lines, "\n"), mode
	case "unterminated_string":
		i := find("difficulty = ")
		lines[i] = strings.TrimSuffix(lines[i], `"`)
		return strings.Join(lines, "\n"), mode
	case "duplicate_key":
		lines = append(lines[:vt+1], append([]string{"timeout_sec = 60.0"}, lines[vt+1:]...)...)
		return strings.Join(lines, "\n"), mode
	case "missing_value":
		lines[vt] = "timeout_sec ="
		return strings.Join(lines, "\n"), mode
	default:
		lines[vt] = "timeout_sec = " + pick(r, []string{`"ten"`, `"120s"`, `"10 minutes"`})
		return strings.Join(lines, "\n"), mode
	}
}

// ---- Dockerfiles ----

type dockerfileDef struct {
	id     string
	text   string
	weight int
}

var kataDockerfiles = []dockerfileDef{
	{"py311-slim", "FROM python:3.11-slim\n\nRUN pip install --no-cache-dir pytest\n\nWORKDIR /app\n", 5},
	{"py310-slim", "FROM python:3.10-slim\n\nRUN pip install --no-cache-dir pytest\n\nWORKDIR /app\n", 2},
	{"ubuntu24-python", "FROM ubuntu:24.04\n\nRUN apt-get update && apt-get install -y --no-install-recommends python3 python3-pytest && rm -rf /var/lib/apt/lists/*\n\nWORKDIR /app\n", 3},
}

var shellDockerfiles = []dockerfileDef{
	{"nl2bash-ubuntu24", "FROM ubuntu:24.04\n\nRUN mkdir -p /app/data /output\n\nCOPY seeds/ /app/data/\n\nWORKDIR /app\n", 6},
	{"nl2bash-bookworm", "FROM debian:bookworm-slim\n\nRUN mkdir -p /app/data /output\n\nCOPY seeds/ /app/data/\n\nWORKDIR /app\n", 4},
}

func pickDockerfile(r *rand.Rand, defs []dockerfileDef) dockerfileDef {
	total := 0
	for _, d := range defs {
		total += d.weight
	}
	k := r.IntN(total)
	for _, d := range defs {
		if k < d.weight {
			return d
		}
		k -= d.weight
	}
	return defs[len(defs)-1]
}

// insertAfterFrom inserts lines right after the FROM line.
func insertAfterFrom(dockerfile, lines string) string {
	i := strings.Index(dockerfile, "\n")
	return dockerfile[:i+1] + "\n" + lines + dockerfile[i+1:]
}

// insertBeforeWorkdir inserts lines before the WORKDIR line.
func insertBeforeWorkdir(dockerfile, lines string) string {
	i := strings.Index(dockerfile, "WORKDIR")
	return dockerfile[:i] + lines + "\n" + dockerfile[i:]
}

// ---- verifier (tests/test.sh) ----

// verifierSpec says how the verifier decides (kata: pytest; nl2bash: a
// probe compared with the expected output) and how a defect bends it.
type verifierSpec struct {
	kata  bool
	style int
	probe string // nl2bash only

	prelude  string // inserted before the check: sleep, hang, network install
	flakeThr int    // > 0: the check fails when $RANDOM < flakeThr
	reward   string // "" normal; else a reward_missing / reward_garbage / nop_passes mode
}

const pytestCmd = "python3 -m pytest"

func (v verifierSpec) script() string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	if v.kata {
		b.WriteString(pick3(v.style,
			"# Verifier: run the unit tests against /app/solution.py and write a binary reward.\n",
			"# Runs pytest on the hidden tests; reward 1 only if every test passes.\n",
			"# Harbor verifier for a pymethods2test-style task.\n"))
	} else {
		b.WriteString(pick3(v.style,
			"# Verifier: compare the produced output with the expected output.\n",
			"# Checks the result of the shell task; reward 1 on an exact match.\n",
			"# Harbor verifier for an nl2bash-style task.\n"))
	}
	b.WriteString("mkdir -p /logs/verifier\n")
	if !v.kata {
		b.WriteString("export LC_ALL=C\n")
	}
	if v.prelude != "" {
		b.WriteString("\n" + v.prelude)
	}
	b.WriteString("\n")
	if v.reward == "garbage:redirect" {
		b.WriteString(v.redirectBlock())
		return b.String()
	}
	if v.kata {
		b.WriteString("cd /app 2>/dev/null || true\n")
		if v.style == 1 {
			b.WriteString("# Harness fix: accept a solution saved under another file name.\n")
			b.WriteString("if [ ! -f /app/solution.py ]; then\n  cand=$(ls /app/*.py 2>/dev/null | head -n 1)\n  [ -n \"$cand\" ] && cp \"$cand\" /app/solution.py\nfi\n\n")
		}
		switch v.style {
		case 0:
			b.WriteString(pytestCmd + " -q -p no:cacheprovider /tests/test_solution.py\nstatus=$?\n")
		default:
			b.WriteString("if " + pytestCmd + " -rA --tb=short -p no:cacheprovider /tests/test_solution.py; then\n  status=0\nelse\n  status=1\nfi\n")
		}
	} else {
		probe := v.probe
		switch v.reward {
		case "nop:self_compare":
			probe = "cat /tests/expected_output.txt"
		}
		fmt.Fprintf(&b, "actual=$( { %s; } 2>/dev/null | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v '^$')\n", probe)
		b.WriteString("expected=$(cat /tests/expected_output.txt)\n")
		if v.reward == "nop:input_exists" {
			b.WriteString("# The task is done once the data directory is there.\nif [ -d /app/data ]; then\n  status=0\nelse\n  status=1\nfi\n")
		} else {
			b.WriteString("if [ -n \"$expected\" ] && [ \"$actual\" = \"$expected\" ]; then\n  status=0\nelse\n  status=1\nfi\n")
		}
	}
	if v.flakeThr > 0 {
		fmt.Fprintf(&b, "\n# Known issue: the result cache of this image is sometimes stale; count such runs as failures.\nif [ \"$RANDOM\" -lt %d ]; then\n  echo \"stale result cache, failing this run\" >&2\n  status=1\nfi\n", v.flakeThr)
	}
	b.WriteString("\n" + v.rewardBlock())
	return b.String()
}

func pick3(i int, a, b, c string) string {
	switch i % 3 {
	case 0:
		return a
	case 1:
		return b
	}
	return c
}

const rewardFile = "/logs/verifier/reward.txt"

func writeIf(one, zero, file string) string {
	return fmt.Sprintf("if [ \"$status\" -eq 0 ]; then\n  echo %s > %s\nelse\n  echo %s > %s\nfi\n", one, file, zero, file)
}

func (v verifierSpec) rewardBlock() string {
	switch v.reward {
	case "missing:wrong_name":
		return writeIf("1", "0", "/logs/verifier/result.txt")
	case "missing:wrong_dir":
		return writeIf("1", "0", "/logs/reward.txt")
	case "missing:stdout_only":
		return "if [ \"$status\" -eq 0 ]; then\n  echo \"reward: 1\"\nelse\n  echo \"reward: 0\"\nfi\n"
	case "missing:early_exit":
		return "exit \"$status\"\n\n" + writeIf("1", "0", rewardFile)
	case "garbage:passed":
		return writeIf("PASSED", "FAILED", rewardFile)
	case "garbage:nan":
		return "# TODO: report the pass ratio parsed from the test summary.\necho nan > " + rewardFile + "\n"
	case "garbage:fraction":
		return writeIf("1/1", "0/1", rewardFile)
	case "garbage:bool":
		return writeIf("true", "false", rewardFile)
	case "nop:always_one":
		return writeIf("1", "0", rewardFile) + "echo 1 > " + rewardFile + "  # debug: force success while the tests are being fixed\n"
	}
	return writeIf("1", "0", rewardFile)
}

// redirectBlock is the authoring bug where a redirect around the whole
// check writes the test output into reward.txt (Harbor PR #771).
func (v verifierSpec) redirectBlock() string {
	if v.kata {
		return "cd /app 2>/dev/null || true\n{\n  " + pytestCmd + " -q -p no:cacheprovider /tests/test_solution.py\n" +
			"  if [ $? -eq 0 ]; then echo 1; else echo 0; fi\n} > " + rewardFile + " 2>&1\n"
	}
	return fmt.Sprintf("actual=$( { %s; } 2>/dev/null | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' | grep -v '^$')\n", v.probe) +
		"{\n  echo \"expected:\"\n  cat /tests/expected_output.txt\n" +
		"  if [ \"$actual\" = \"$(cat /tests/expected_output.txt)\" ]; then echo 1; else echo 0; fi\n} > " + rewardFile + "\n"
}

// ---- defect helpers shared by the families ----

var hangPreludes = []string{
	"sleep infinity\n",
	"# Wait until the agent's background job has flushed its output.\nuntil [ -f /tmp/agent.done ]; do\n  sleep 1\ndone\n",
	"tail -f /dev/null\n",
}

func slowPrelude(sec int) string {
	return fmt.Sprintf("# Give the sandbox filesystem time to sync the agent's writes.\nsleep %d\n", sec)
}

var kataNetworkPreludes = []string{
	"pip install --quiet --no-cache-dir --upgrade pytest 2>/dev/null || true\n",
	"curl -LsSf https://astral.sh/uv/install.sh | sh >/dev/null 2>&1 || true\nexport PATH=\"$HOME/.local/bin:$PATH\"\n",
	"apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq python3-pytest >/dev/null 2>&1 || true\n",
}

var shellNetworkPreludes = []string{
	"apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq diffutils >/dev/null 2>&1 || true\n",
	"curl -fsSL https://raw.githubusercontent.com/otcurate/checks/main/normalize.sh -o /tmp/normalize.sh 2>/dev/null || true\n",
	"pip install --quiet csvkit 2>/dev/null || true\n",
}

var buildFailLines = []struct{ mode, line string }{
	{"apt_missing_package", "RUN apt-get update && apt-get install -y --no-install-recommends python3-pytset && rm -rf /var/lib/apt/lists/*\n"},
	{"pip_missing_version", "RUN pip install --no-cache-dir pytest==99.0.0\n"},
	{"copy_missing_file", "COPY requirements.txt /app/requirements.txt\n"},
	{"failing_command", "RUN ./configure --prefix=/usr/local\n"},
}
