package poolgen

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"

	"github.com/otcurate/otcurate/bundle"
)

// The "pymethods" family is shaped like the mission's pool
// (pymethods2test): a small Python project in environment/ (a package with
// one class, the project's own tests under tests/, a pyproject.toml, all
// copied into the image), one method to implement (its body raises
// NotImplementedError) or to repair (its body is a subtly wrong
// implementation), the verifier's pytest tests under tests/ run by
// tests/test.sh, and NO solution/. The method bodies come from the kata
// families (katas/): the reference becomes the hidden solution
// (Task.Solution, never written into the pool), the wrong implementation
// the body to repair.
//
// Its defects are the ones such pools really have, written the way the
// real mistakes look (not the way a detector would look for them): a
// verifier that passes the untouched project (smoke tests that only import
// the module, `|| true` or a `| tee` eating pytest's status, a test class
// pytest cannot collect with exit 5 taken for a pass, tests that skip what
// is not implemented), one that stops before it writes a reward (`set -e`,
// an `&& echo 1` chain, a virtualenv or a workdir from another template), one that passes the
// untouched project only sometimes (an unseeded random sample of the case
// table, a random CI shard that can be empty), tests that need the network
// (a pip install of a pytest plugin at test time, cases fetched from a
// URL) and a slow verifier (a sleep while "the filesystem settles").

// FamilyPyMethods is the solution-less pymethods2test-like family.
const FamilyPyMethods = "pymethods"

// Reason codes the oracle-free verifier gate gives (filters/flaky.go on
// the gate's branch); the family's labels name them as expected reasons.
const (
	reasonNopPasses     = "nop_passes"
	reasonFlakyVerifier = "flaky_verifier"
	reasonRewardMissing = "reward_missing"
	reasonNeedsNetwork  = "verifier_needs_network"
	reasonSlowVerifier  = "slow_verifier"
)

// pyMethodsDefects are the defect kinds the family injects, with their
// default rates and the verdict the oracle-free gate must reach.
var pyMethodsDefects = map[string]struct {
	reason string
	rate   float64
}{
	DefectNopPasses:       {reasonNopPasses, 0.05},
	DefectRewardMissing:   {reasonRewardMissing, 0.04},
	DefectFlakyVerifier:   {reasonFlakyVerifier, 0.04},
	DefectNetworkVerifier: {reasonNeedsNetwork, 0.03},
	DefectSlowVerifier:    {reasonSlowVerifier, 0.02},
}

// PyMethodsDefectKinds lists the defect kinds of the pymethods family,
// sorted.
func PyMethodsDefectKinds() []string {
	out := make([]string, 0, len(pyMethodsDefects))
	for k := range pyMethodsDefects {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// DefaultPyMethodsRates returns the pymethods family's default defect mix
// (18% defective): 5% nop_passes, 4% reward_missing, 4% flaky_verifier,
// 3% network_verifier, 2% slow_verifier.
func DefaultPyMethodsRates() Rates {
	r := Rates{}
	for k, d := range pyMethodsDefects {
		r[k] = d.rate
	}
	return r
}

func validatePyMethodsRates(r Rates) error {
	total := 0.0
	for k, v := range r {
		if _, ok := pyMethodsDefects[k]; !ok {
			return fmt.Errorf("poolgen: %q is not a defect kind of the pymethods family (kinds: %s)", k, strings.Join(PyMethodsDefectKinds(), ", "))
		}
		if v < 0 || v > 1 || v != v {
			return fmt.Errorf("poolgen: pymethods rate of %s is %v, want a probability", k, v)
		}
		total += v
	}
	if total > 1+1e-9 {
		return fmt.Errorf("poolgen: pymethods defect rates add up to %.4f > 1", total)
	}
	return nil
}

// pymPlan is a pymethods task before the Python batch: a kata plan (whose
// job computes the expected values and the wrong implementation's) plus
// the project's shape and the defect.
type pymPlan struct {
	k       *kataPlan
	defect  string
	mode    string // the defect's sub-variant
	repair  bool   // the method is wrong (repair it) rather than missing
	pkg     string // Python package name
	module  string // module in the package
	class   string
	verStyl int
	stub    int // how the missing body is written
	nShards int // random_shard: CI shards, the last one empty
	r       *rand.Rand
}

var pymPackages = []string{"pytoolkit", "corelib", "datakit", "utilkit", "libhelpers", "appcore", "pyutils", "minilib"}

var pymCategoryClass = map[string][2]string{ // category -> module, class
	"dicts":               {"mappings", "MappingTools"},
	"dynamic_programming": {"optimize", "Solver"},
	"lists":               {"sequences", "ListOps"},
	"matrices":            {"grid", "GridOps"},
	"numbers":             {"numeric", "NumberTools"},
	"parsing":             {"parsers", "TextParser"},
	"strings":             {"text", "StringTools"},
}

func (g *generator) pickPyMethodsDefect(r *rand.Rand) string {
	u, acc := r.Float64(), 0.0
	for _, k := range PyMethodsDefectKinds() {
		acc += g.o.PyMethodsRates[k]
		if u < acc {
			return k
		}
	}
	return ""
}

func (g *generator) planPyMethods(i int, name string) *pymPlan {
	r := taskRand(g.o.Seed, i, 4)
	p := &pymPlan{r: r, defect: g.pickPyMethodsDefect(r)}
	p.repair = chance(r, 0.4)
	switch p.defect {
	case DefectFlakyVerifier:
		p.mode = pick(r, []string{"random_sample", "random_sample", "random_shard"})
		if p.mode == "random_sample" {
			p.repair = true // the untouched wrong body passes the cases the sample may avoid
		}
	case DefectNopPasses:
		modes := []string{"import_only", "or_true", "pipe_tee", "uncollected_class"}
		if !p.repair {
			modes = append(modes, "skip_not_implemented")
		}
		p.mode = pick(r, modes)
	case DefectRewardMissing:
		p.mode = pick(r, []string{"set_e", "and_chain", "venv_missing", "wrong_workdir"})
	case DefectNetworkVerifier:
		p.mode = pick(r, []string{"pip_plugin", "remote_cases"})
	case DefectSlowVerifier:
		p.mode = pick(r, []string{"settle_sleep", "fixture_sleep"})
	}
	var f *kataFamily
	var v int
	if g.o.Balanced {
		fi, vi := balancedPick(g.o.Seed^0x5bd1e995, i, kataVariants)
		f, v = kataFamilies[fi], vi
	} else {
		f = kataFamilies[r.IntN(len(kataFamilies))]
		v = r.IntN(len(f.Variants))
	}
	p.k = planKataVariant(r, f, v, name, true)
	p.k.toml = genTaskToml(r, tomlMeta{difficulty: f.Difficulty, category: f.Category, tags: []string{"python", f.Category, "pymethods2test", "no-solution"}}, name)
	mc := pymCategoryClass[f.Category]
	if mc[0] == "" {
		mc = [2]string{"helpers", "Toolkit"}
	}
	p.pkg, p.module, p.class = pick(r, pymPackages), mc[0], mc[1]
	p.verStyl = r.IntN(3)
	p.stub = r.IntN(3)
	return p
}

func (p *pymPlan) template() string {
	return fmt.Sprintf("%s/%s/v%d", FamilyPyMethods, p.k.fam.ID, p.k.v+1)
}

// methodSource turns a kata function (its first line the signature) into a
// method of the class: `self` first, four more spaces of indent, recursive
// calls through self, and the docstring after the signature.
func methodSource(code, fn, doc string) string {
	lines := strings.Split(strings.TrimRight(code, "\n"), "\n")
	sig := lines[0]
	open := strings.Index(sig, "(")
	if strings.HasPrefix(sig[open+1:], ")") {
		sig = sig[:open+1] + "self" + sig[open+1:]
	} else {
		sig = sig[:open+1] + "self, " + sig[open+1:]
	}
	self := regexp.MustCompile(`\b` + regexp.QuoteMeta(fn) + `\(`)
	var b strings.Builder
	b.WriteString("    " + sig + "\n" + doc)
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("    " + self.ReplaceAllString(l, "self."+fn+"(") + "\n")
	}
	return b.String()
}

func (p *pymPlan) docstring(vv kataVariant) string {
	return "        \"\"\"" + vv.expand(vv.Summary) + "\n\n" + wrap(vv.expand(vv.Spec), 88, "        ") + "\n        \"\"\"\n"
}

// moduleText is the module with the given method source.
func (p *pymPlan) moduleText(method string) string {
	return fmt.Sprintf(`"""%s helpers of %s."""


class %s:
    """Small, dependency-free helpers used across %s."""

    def __init__(self, strict: bool = False):
        self.strict = strict

    def __repr__(self) -> str:
        return f"%s(strict={self.strict})"

%s`, strings.ToUpper(p.module[:1])+p.module[1:], p.pkg, p.class, p.pkg, p.class, method)
}

func (p *pymPlan) stubMethod(vv kataVariant, ref string) string {
	sig := strings.SplitN(methodSource(ref, vv.Fn, ""), "\n", 2)[0] + "\n"
	body := []string{
		"        raise NotImplementedError\n",
		"        # TODO: implement\n        raise NotImplementedError(\"" + vv.Fn + " is not implemented yet\")\n",
		"        raise NotImplementedError(\"TODO\")\n",
	}[p.stub]
	return sig + p.docstring(vv) + body
}

func caseCall(class, fn, args string) string { return fmt.Sprintf("%s().%s(%s)", class, fn, args) }

// pymBuilt is a built pymethods task: its draft and hidden solution.
type pymBuilt struct {
	d        *draft
	solution []bundle.Entry
	params   map[string]any
}

func (p *pymPlan) build(res *kataResult) (*pymBuilt, error) {
	kb, err := p.k.build(res)
	if err != nil {
		return nil, err
	}
	vv := p.k.variant()
	ref := p.k.refCode()
	fn, cls := vv.Fn, p.class
	imp := fmt.Sprintf("from %s.%s import %s\n", p.pkg, p.module, cls)
	refModule := p.moduleText(methodSource(ref, fn, p.docstring(vv)))
	var shipped string
	if p.repair {
		shipped = p.moduleText(methodSource(kb.wrongSrc, fn, p.docstring(vv)))
	} else {
		shipped = p.moduleText(p.stubMethod(vv, ref))
	}
	params := map[string]any{"task": map[bool]string{true: "repair", false: "implement"}[p.repair]}
	tests := kb.tests
	sample := 0
	if p.defect == DefectFlakyVerifier && p.mode == "random_sample" {
		var prob float64
		tests, sample, prob = p.flakyCases(res, kb)
		if tests == nil { // the bug changes every drawn result: a shard flake instead
			p.mode = "random_shard"
			tests = kb.tests
		} else {
			params["flake_prob"] = prob
		}
	}
	if p.defect == DefectFlakyVerifier && p.mode == "random_shard" {
		// Tests are numbered into shards 0..S-2 by hand; the verifier runs
		// shard $RANDOM % S, and the empty last shard "passes" (exit 5).
		p.nShards = 2 + p.r.IntN(3)
		params["flake_prob"] = float64(int(1000/float64(p.nShards)+0.5)) / 1000
	}
	// The project's own tests: the instruction's examples (inputs the
	// verifier's table does not hold), visible in /app.
	examples := pymExamples(res, tests, p.k.nExamples)
	projTest := "import pytest\n\n" + imp + "\n\n@pytest.fixture\ndef tools():\n    return " + cls + "()\n"
	for i, t := range examples {
		projTest += fmt.Sprintf("\n\ndef test_%s_example_%d(tools):\n    assert tools.%s(%s) == %s\n", fn, i+1, fn, t.args, t.out)
	}
	modPath := p.pkg + "/" + p.module + ".py"
	projTestName := "test_" + p.module + ".py"
	pyproject := fmt.Sprintf("[project]\nname = %q\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n", p.pkg)
	env := map[string]string{
		modPath:                 shipped,
		p.pkg + "/__init__.py":  fmt.Sprintf("\"\"\"%s: small helpers.\"\"\"\n\n__version__ = \"0.1.0\"\n", p.pkg),
		"tests/" + projTestName: projTest,
		"tests/__init__.py":     "",
		"pyproject.toml":        pyproject,
	}
	dockerText := p.k.docker.text + "\nCOPY pyproject.toml /app/pyproject.toml\nCOPY " + p.pkg + "/ /app/" + p.pkg + "/\nCOPY tests/ /app/tests/\n"

	var instr strings.Builder
	where := fmt.Sprintf("`%s.%s` in `/app/%s`", cls, fn, modPath)
	if p.repair {
		fmt.Fprintf(&instr, "The method %s returns wrong results for some inputs. Fix it.\n\n", where)
	} else {
		fmt.Fprintf(&instr, "The method %s is not implemented yet. Implement it.\n\n", where)
	}
	fmt.Fprintf(&instr, "%s %s\n\n", vv.expand(vv.Summary), vv.expand(vv.Spec))
	instr.WriteString("```python\n")
	for _, e := range examples {
		fmt.Fprintf(&instr, ">>> %s\n%s\n", caseCall(cls, fn, e.args), e.out)
	}
	fmt.Fprintf(&instr, "```\n\nKeep the class and method names and the signature. The project's tests are in `/app/tests/` (`cd /app && python3 -m pytest`); more tests are run after you finish.\n")

	// The verifier's tests.
	hidden := p.hiddenTests(imp, fn, tests, sample)
	d := &draft{
		family:      FamilyPyMethods,
		template:    p.template(),
		dockerID:    p.k.docker.id,
		instruction: instr.String(),
		taskToml:    p.k.toml,
		dockerfile:  dockerText,
		env:         env,
		tests:       map[string]string{"test_outputs.py": hidden},
	}
	d.testSh = p.testScript(projTestName, params)
	if strings.Contains(d.testSh, "/tests/"+projTestName) {
		// The verifier runs the project's tests too: a byte-identical
		// copy of them sits next to its own entry file, as in real pools.
		d.tests[projTestName] = projTest
	}
	if p.defect != "" && p.mode != "" {
		params["mode"] = p.mode
	}
	solveSh := "#!/bin/bash\n# Hidden reference (poolgen): the method implemented.\ncat > /app/" + modPath + " << 'PYEOF'\n" + refModule + "PYEOF\n"
	return &pymBuilt{d: d, params: params, solution: []bundle.Entry{{Name: "solution/solve.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(solveSh)}}}, nil
}

// pymExamples picks n worked examples among the drawn inputs that are not
// in the verifier's table (its first n cases when there are too few).
func pymExamples(res *kataResult, tests []kcase, n int) []kcase {
	in := map[string]bool{}
	for _, t := range tests {
		in[t.args] = true
	}
	var out []kcase
	for i, a := range res.Args {
		if len(out) == n {
			break
		}
		if !in[a] {
			in[a] = true
			out = append(out, kcase{a, res.Out[i]})
		}
	}
	if len(out) < n {
		return tests[:min(n, len(tests))]
	}
	return out
}

// flakeShapes are (table size, failing cases, sample size) with the
// chance that an unseeded sample avoids every failing case.
var flakeShapes = []struct{ n, f, k int }{
	{6, 1, 3},  // 10/20 = 0.5
	{4, 1, 2},  // 3/6 = 0.5
	{10, 1, 5}, // 0.5
	{6, 2, 2},  // 6/15 = 0.4
	{8, 1, 2},  // 21/28 = 0.75
	{5, 1, 4},  // 1/5 = 0.2
	{10, 1, 9}, // 0.1
}

func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	out := 1.0
	for i := 0; i < k; i++ {
		out = out * float64(n-i) / float64(i+1)
	}
	return out
}

// flakyCases picks a case table on which the shipped wrong body fails
// exactly f of n cases, and the sample size k: the untouched project then
// passes a run with probability C(n-f,k)/C(n,k). nil when the candidates
// cannot make such a table.
func (p *pymPlan) flakyCases(res *kataResult, kb *kataBuilt) ([]kcase, int, float64) {
	if kb.wrongMode != "mutation" {
		return nil, 0, 0
	}
	shape := flakeShapes[p.r.IntN(len(flakeShapes))]
	var bad, good []kcase
	seen := map[string]bool{}
	for i, a := range res.Args {
		if seen[a] || len(res.Wrong) == 0 {
			continue
		}
		seen[a] = true
		c := kcase{a, res.Out[i]}
		if res.Wrong[0][i] != res.Out[i] {
			bad = append(bad, c)
		} else {
			good = append(good, c)
		}
	}
	if len(bad) < shape.f || len(good) < shape.n-shape.f {
		return nil, 0, 0
	}
	cases := append(append([]kcase(nil), good[:shape.n-shape.f]...), bad[:shape.f]...)
	cases = shuffled(p.r, cases)
	prob := binom(shape.n-shape.f, shape.k) / binom(shape.n, shape.k)
	return cases, shape.k, float64(int(prob*1000+0.5)) / 1000
}

func (p *pymPlan) hiddenTests(imp, fn string, tests []kcase, sample int) string {
	cls := p.class
	var b strings.Builder
	table := func() {
		b.WriteString("CASES = [\n")
		for _, t := range tests {
			fmt.Fprintf(&b, "    ((%s,), %s),\n", t.args, t.out)
		}
		b.WriteString("]\n")
	}
	switch {
	case p.defect == DefectNopPasses && p.mode == "import_only":
		fmt.Fprintf(&b, "import importlib\n\n\ndef test_module_imports():\n    mod = importlib.import_module(%q)\n    assert hasattr(mod, %q)\n\n\n", p.pkg+"."+p.module, cls)
		fmt.Fprintf(&b, "def test_method_exists():\n    mod = importlib.import_module(%q)\n    assert callable(getattr(mod.%s, %q, None))\n\n\n", p.pkg+"."+p.module, cls, fn)
		fmt.Fprintf(&b, "# TODO: port the value checks from the old harness.\n")
		return b.String()
	case p.defect == DefectNopPasses && p.mode == "uncollected_class":
		b.WriteString(imp + "\n\n")
		table()
		fmt.Fprintf(&b, "\n\nclass Test%s:\n    def __init__(self):\n        self.tools = %s()\n\n    def test_cases(self):\n        for args, expected in CASES:\n            assert self.tools.%s(*args) == expected, args\n", cls, cls, fn)
		return b.String()
	case p.defect == DefectNopPasses && p.mode == "skip_not_implemented":
		b.WriteString("import pytest\n\n" + imp + "\n\n")
		table()
		fmt.Fprintf(&b, "\n\ndef call(*args):\n    try:\n        return %s().%s(*args)\n    except NotImplementedError:\n        pytest.skip(\"not implemented\")\n\n\n", cls, fn)
		fmt.Fprintf(&b, "@pytest.mark.parametrize(\"args, expected\", CASES)\ndef test_%s(args, expected):\n    assert call(*args) == expected\n", fn)
		return b.String()
	case p.defect == DefectFlakyVerifier && p.mode == "random_sample":
		b.WriteString("import random\n\nimport pytest\n\n" + imp + "\n\n")
		table()
		fmt.Fprintf(&b, "\n\n# The full table is slow on CI: each run checks a random sample of it.\n@pytest.mark.parametrize(\"args, expected\", random.sample(CASES, %d))\ndef test_%s_sample(args, expected):\n    assert %s().%s(*args) == expected\n", sample, fn, cls, fn)
		return b.String()
	case p.defect == DefectFlakyVerifier && p.mode == "random_shard":
		// Tests numbered into shards; the verifier runs one random shard.
		b.WriteString(imp + "\n")
		for i, t := range tests {
			fmt.Fprintf(&b, "\n\ndef test_%s_shard%d_case%d():\n    assert %s == %s\n", fn, i%(p.nShards-1), i+1, caseCall(cls, fn, t.args), t.out)
		}
		return b.String()
	case p.defect == DefectNetworkVerifier && p.mode == "remote_cases":
		b.WriteString("import json\nimport urllib.request\n\nimport pytest\n\n" + imp + "\n")
		fmt.Fprintf(&b, "CASES_URL = \"https://raw.githubusercontent.com/%s-dev/%s/main/tests/data/%s_cases.json\"\n\n\n", p.pkg, p.pkg, fn)
		b.WriteString("@pytest.fixture(scope=\"module\")\ndef cases():\n    with urllib.request.urlopen(CASES_URL, timeout=20) as resp:\n        return json.load(resp)\n\n\n")
		fmt.Fprintf(&b, "def test_%s_cases(cases):\n    tools = %s()\n    for case in cases:\n        assert tools.%s(*case[\"args\"]) == case[\"expected\"], case\n", fn, cls, fn)
		return b.String()
	case p.defect == DefectSlowVerifier && p.mode == "fixture_sleep":
		b.WriteString("import time\n\nimport pytest\n\n" + imp + "\n\n")
		fmt.Fprintf(&b, "@pytest.fixture(scope=\"session\", autouse=True)\ndef settle():\n    # Give the sandbox's file sync time to flush the agent's edits.\n    time.sleep(%d)\n\n\n", p.sleepSec())
		table()
		fmt.Fprintf(&b, "\n\n@pytest.mark.parametrize(\"args, expected\", CASES)\ndef test_%s(args, expected):\n    assert %s().%s(*args) == expected\n", fn, cls, fn)
		return b.String()
	}
	switch p.verStyl {
	case 0:
		b.WriteString("import pytest\n\n" + imp + "\n\n")
		table()
		fmt.Fprintf(&b, "\n\n@pytest.mark.parametrize(\"args, expected\", CASES)\ndef test_%s(args, expected):\n    assert %s().%s(*args) == expected\n", fn, cls, fn)
	default:
		b.WriteString(imp)
		for i, t := range tests {
			fmt.Fprintf(&b, "\n\ndef test_%s_%d():\n    assert %s == %s\n", fn, i+1, caseCall(cls, fn, t.args), t.out)
		}
	}
	return b.String()
}

func (p *pymPlan) sleepSec() int { return 25 + int(p.r.Uint64()%4)*5 }

const pymRewardIf = "if [ $? -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n"

// testScript writes tests/test.sh: one of three clean shapes seen in real
// pools, or the defect's shape.
func (p *pymPlan) testScript(projTest string, params map[string]any) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	pytest := "python3 -m pytest -rA -p no:cacheprovider /tests/test_outputs.py"
	switch p.defect {
	case DefectNopPasses:
		switch p.mode {
		case "or_true":
			b.WriteString("mkdir -p /logs/verifier\ncd /app\n\n# Do not let a failing test abort the script before the reward is written.\n" + pytest + " || true\n\n" + pymRewardIf)
			return b.String()
		case "pipe_tee":
			b.WriteString("mkdir -p /logs/verifier\ncd /app\n\n" + pytest + " 2>&1 | tee /logs/verifier/pytest.log\n\n" + pymRewardIf)
			return b.String()
		case "uncollected_class":
			b.WriteString("mkdir -p /logs/verifier\ncd /app\n\n" + pytest + "\nstatus=$?\n\n# pytest exits 1 when a test failed.\nif [ $status -eq 1 ]; then\n  echo 0 > /logs/verifier/reward.txt\nelse\n  echo 1 > /logs/verifier/reward.txt\nfi\n")
			return b.String()
		}
	case DefectRewardMissing:
		switch p.mode {
		case "set_e":
			b.WriteString("set -euo pipefail\n\nmkdir -p /logs/verifier\ncd /app\n\n" + pytest + "\nstatus=$?\n\nif [ $status -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\nelse\n  echo 0 > /logs/verifier/reward.txt\nfi\n")
		case "and_chain":
			b.WriteString("mkdir -p /logs/verifier\ncd /app\n\n" + pytest + " && echo 1 > /logs/verifier/reward.txt\n")
		case "venv_missing": // the template's image made a venv; this one did not
			b.WriteString("set -e\n\n# The test environment lives in the image's virtualenv.\nsource /opt/venv/bin/activate\ncd /app\n\n" + pytest + "\n\n" + pymRewardIf)
		default: // wrong_workdir: copied from a template with another layout
			b.WriteString("set -e\nmkdir -p /logs/verifier\ncd /workspace/project\n\n" + pytest + "\n" + pymRewardIf)
		}
		return b.String()
	case DefectNetworkVerifier:
		if p.mode == "pip_plugin" {
			b.WriteString("mkdir -p /logs/verifier\ncd /app\n\npip install --quiet pytest-json-ctrf==0.3.5\n\n" + pytest + " --ctrf /logs/verifier/ctrf.json\n\n" + pymRewardIf)
			return b.String()
		}
	case DefectSlowVerifier:
		if p.mode == "settle_sleep" {
			fmt.Fprintf(&b, "mkdir -p /logs/verifier\n\n# Wait for the sandbox's file sync to flush the agent's edits.\nsleep %d\n\ncd /app\n%s\n\n%s", p.sleepSec(), pytest, pymRewardIf)
			return b.String()
		}
	}
	if p.defect == DefectFlakyVerifier && p.mode == "random_shard" {
		shards := p.nShards
		fmt.Fprintf(&b, "mkdir -p /logs/verifier\ncd /app\n\n# The suite is split across %d CI shards; each run checks one.\nshard=$((RANDOM %% %d))\n%s -k \"shard${shard}_\"\nstatus=$?\n\n# pytest exits 1 when a test failed.\nif [ $status -eq 1 ]; then\n  echo 0 > /logs/verifier/reward.txt\nelse\n  echo 1 > /logs/verifier/reward.txt\nfi\n", shards, shards, pytest)
		return b.String()
	}
	style := p.verStyl
	if p.defect == DefectFlakyVerifier && style == 2 {
		// The project's tests fail the untouched wrong body every time:
		// run only the sampled table, or the flake would never show.
		style = 0
	}
	switch style {
	case 0:
		b.WriteString("cd /app\n" + pytest + "\n" + pymRewardIf)
	case 1:
		b.WriteString("# Run the tests and write a binary reward for Harbor.\ncd /app\n\nset +e\n" + pytest + " --tb=short\nTEST_EXIT_CODE=$?\nset -e\n\nmkdir -p /logs/verifier\nif [ $TEST_EXIT_CODE -eq 0 ]; then\n  echo 1 > /logs/verifier/reward.txt\n  echo \"All tests passed (reward: 1)\"\nelse\n  echo 0 > /logs/verifier/reward.txt\n  echo \"Tests failed (reward: 0)\"\nfi\n\n# Always exit 0 so the reward file is read.\nexit 0\n")
	default:
		fmt.Fprintf(&b, "mkdir -p /logs/verifier\ncd /app\n\n# The verifier's tests and the project's own.\npython3 -m pytest -q -p no:cacheprovider --junitxml=/logs/verifier/junit.xml /tests/test_outputs.py /tests/%s\n%s", projTest, pymRewardIf)
	}
	return b.String()
}
