package poolgen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

const kataCandidates = 24 // inputs drawn for a wrong_oracle task; tests and examples are picked from them

// kataPlan is a kata task whose inputs are drawn but whose expected values
// are still to be computed by the Python batch.
type kataPlan struct {
	fam        *kataFamily
	v          int
	cases      [][]any
	nTests     int
	nExamples  int
	mirror     bool // the instruction's examples are copies of test cases
	instrStyle int
	testStyle  int
	verStyle   int
	oracleFile bool // solution/solution.py + cp, instead of a heredoc
	docker     dockerfileDef
	toml       string
	needWrong  bool
}

func planKata(r *rand.Rand, name string, needWrong bool) *kataPlan {
	f := kataFamilies[r.IntN(len(kataFamilies))]
	return planKataVariant(r, f, r.IntN(len(f.Variants)), name, needWrong)
}

func planKataVariant(r *rand.Rand, f *kataFamily, v int, name string, needWrong bool) *kataPlan {
	p := &kataPlan{
		fam:        f,
		v:          v,
		nTests:     rint(r, 5, 10),
		nExamples:  rint(r, 1, 2),
		mirror:     chance(r, 0.35),
		instrStyle: r.IntN(3),
		testStyle:  r.IntN(3),
		verStyle:   r.IntN(3),
		oracleFile: chance(r, 0.3),
		docker:     pickDockerfile(r, kataDockerfiles),
		needWrong:  needWrong,
	}
	// Draw distinct inputs (JSON equality is repr equality for these
	// values): enough for the tests and the examples, plus spares when the
	// wrong oracle needs a test that its bug changes.
	want := p.nTests + p.nExamples + 1
	if needWrong {
		want = kataCandidates
	}
	seen := map[string]bool{}
	for tries := 0; len(p.cases) < want && tries < 20*want; tries++ {
		c := f.Gen(r, p.v)
		key, _ := json.Marshal(c)
		if !seen[string(key)] {
			seen[string(key)] = true
			p.cases = append(p.cases, c)
		}
	}
	tags := []string{"python", f.Category, "pymethods2test"}
	p.toml = genTaskToml(r, tomlMeta{difficulty: f.Difficulty, category: f.Category, tags: tags}, name)
	return p
}

func (p *kataPlan) variant() kataVariant { return p.fam.Variants[p.v] }

func (p *kataPlan) template() string { return fmt.Sprintf("kata/%s/v%d", p.fam.ID, p.v+1) }

func (p *kataPlan) refCode() string { return p.variant().expand(p.fam.ref(p.v)) }

func (p *kataPlan) wrongCode() string { return p.variant().expand(p.fam.wrong(p.v)) }

// fallbackWrongCode is used when the family's subtle bug does not change
// any drawn test result: it perturbs every result of the reference.
func (p *kataPlan) fallbackWrongCode() string {
	fn := p.variant().Fn
	return p.refCode() + "\n\n_reference_" + fn + " = " + fn + "\n\n\ndef " + fn + `(*args):
    result = _reference_` + fn + `(*args)
    if isinstance(result, bool):
        return not result
    if isinstance(result, int):
        return result + 1
    if isinstance(result, str):
        return result + "?"
    if isinstance(result, list):
        return result[1:] if result else [0]
    if isinstance(result, dict):
        return {**result, "?": 0}
    return None
`
}

func (p *kataPlan) job(req *batchRequest) {
	key := p.template()
	req.Codes[key+"#ref"] = p.refCode()
	j := kataJob{Fn: p.variant().Fn, Ref: key + "#ref", Cases: p.cases}
	if p.needWrong {
		req.Codes[key+"#wrong"] = p.wrongCode()
		req.Codes[key+"#fallback"] = p.fallbackWrongCode()
		j.Wrong = []string{key + "#wrong", key + "#fallback"}
	}
	req.Kata = append(req.Kata, j)
}

type kcase struct{ args, out string }

// kataBuilt is the result of building: the draft plus what some defects need.
type kataBuilt struct {
	d         *draft
	tests     []kcase
	wrongMode string // "mutation" or "fallback"
	wrongSrc  string
}

func (p *kataPlan) build(res *kataResult) (*kataBuilt, error) {
	if res.Error != "" {
		return nil, fmt.Errorf("poolgen: reference of %s failed: %s", p.template(), res.Error)
	}
	// Unique candidates in draw order.
	seen := map[string]bool{}
	var uniq []int
	for i, a := range res.Args {
		if !seen[a] {
			seen[a] = true
			uniq = append(uniq, i)
		}
	}
	nTests := min(p.nTests, len(uniq))
	if nTests < 5 {
		return nil, fmt.Errorf("poolgen: %s: only %d distinct inputs", p.template(), len(uniq))
	}
	testIdx := append([]int(nil), uniq[:nTests]...)
	spare := uniq[nTests:]
	out := &kataBuilt{}
	if p.needWrong {
		out.wrongMode, out.wrongSrc = "mutation", p.wrongCode()
		differs := func(i int) bool { return res.Wrong[0][i] != res.Out[i] }
		ok := false
		for _, i := range testIdx {
			ok = ok || differs(i)
		}
		if !ok {
			for k, i := range spare {
				if differs(i) {
					testIdx[len(testIdx)-1] = i
					spare = append(spare[:k:k], spare[k+1:]...)
					ok = true
					break
				}
			}
		}
		if !ok {
			out.wrongMode, out.wrongSrc = "fallback", p.fallbackWrongCode()
		}
	}
	for _, i := range testIdx {
		out.tests = append(out.tests, kcase{res.Args[i], res.Out[i]})
	}
	var examples []kcase
	if p.mirror || len(spare) < p.nExamples {
		examples = out.tests[:p.nExamples]
	} else {
		for _, i := range spare[:p.nExamples] {
			examples = append(examples, kcase{res.Args[i], res.Out[i]})
		}
	}
	vv := p.variant()
	ref := p.refCode()
	d := &draft{
		family:      FamilyKata,
		template:    p.template(),
		dockerID:    p.docker.id,
		instruction: kataInstruction(p.instrStyle, vv, ref, examples, p.mirror),
		taskToml:    p.toml,
		dockerfile:  p.docker.text,
		tests:       map[string]string{"test_solution.py": kataTestFile(p.testStyle, vv.Fn, out.tests, "")},
		verifier:    verifierSpec{kata: true, style: p.verStyle},
	}
	d.testSh = d.verifier.script()
	d.solveSh, d.solution = kataOracle(p.oracleFile, ref)
	out.d = d
	return out, nil
}

func kataOracle(asFile bool, code string) (string, map[string]string) {
	if asFile {
		return "#!/bin/bash\n# Oracle: install the reference solution.\nmkdir -p /app\ncp /solution/solution.py /app/solution.py\n",
			map[string]string{"solution.py": code}
	}
	return "#!/bin/bash\n# Oracle: write the reference implementation.\nmkdir -p /app\ncat > /app/solution.py << 'EOF'\n" + code + "EOF\n", nil
}

// signature returns "name(args: types) -> type" from the reference.
func signature(ref string) string {
	line, _, _ := strings.Cut(ref, "\n")
	return strings.TrimSuffix(strings.TrimPrefix(line, "def "), ":")
}

func wrap(text string, width int, indent string) string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(text) {
		if cur != "" && len(indent)+len(cur)+1+len(w) > width {
			lines = append(lines, indent+cur)
			cur = w
		} else if cur == "" {
			cur = w
		} else {
			cur += " " + w
		}
	}
	if cur != "" {
		lines = append(lines, indent+cur)
	}
	return strings.Join(lines, "\n")
}

func kataInstruction(style int, vv kataVariant, ref string, examples []kcase, mirror bool) string {
	sig := signature(ref)
	summary := vv.expand(vv.Summary)
	spec := vv.expand(vv.Spec)
	var b strings.Builder
	switch style {
	case 0: // docstring
		b.WriteString("Implement the function below in `/app/solution.py`.\n\n```python\ndef " + sig + ":\n")
		b.WriteString("    \"\"\"" + summary + "\n\n")
		b.WriteString(wrap(spec, 88, "    ") + "\n\n")
		if len(examples) == 1 {
			b.WriteString("    Example:\n")
		} else {
			b.WriteString("    Examples:\n")
		}
		for _, e := range examples {
			fmt.Fprintf(&b, "        >>> %s(%s)\n        %s\n", vv.Fn, e.args, e.out)
		}
		b.WriteString("    \"\"\"\n```\n\n")
		fmt.Fprintf(&b, "The tests import `%s` from `solution`, so keep that name.\n", vv.Fn)
	case 1: // markdown
		fmt.Fprintf(&b, "# %s\n\nWrite a Python function `%s(%s)` in the file `/app/solution.py`.\n\n", strings.TrimSuffix(summary, "."), vv.Fn, strings.Join(vv.Args, ", "))
		b.WriteString(wrap(spec, 100, "") + "\n\n## Examples\n\n```python\n")
		for _, e := range examples {
			fmt.Fprintf(&b, ">>> %s(%s)\n%s\n", vv.Fn, e.args, e.out)
		}
		b.WriteString("```\n")
		if mirror {
			b.WriteString("\nThe examples mirror the tests.\n")
		}
	default: // compact
		fmt.Fprintf(&b, "Create `/app/solution.py` defining `def %s`.\n\n%s %s\n\n", sig, summary, spec)
		for i, e := range examples {
			if i == 0 {
				fmt.Fprintf(&b, "For example, `%s(%s)` returns `%s`.", vv.Fn, e.args, e.out)
			} else {
				fmt.Fprintf(&b, " Likewise `%s(%s)` returns `%s`.", vv.Fn, e.args, e.out)
			}
		}
		b.WriteString("\n\nYour solution will be run against hidden pytest tests.\n")
	}
	return b.String()
}

// revealSection lists every test call with its expected value: the
// instruction_reveals defect.
func revealSection(fn string, tests []kcase) string {
	var b strings.Builder
	b.WriteString("\n## Test cases\n\nYour function is checked with exactly these assertions:\n\n```python\n")
	for _, t := range tests {
		fmt.Fprintf(&b, "assert %s(%s) == %s\n", fn, t.args, t.out)
	}
	b.WriteString("```\n")
	return b.String()
}

const kataTestHeader = "import sys\n\nsys.path.insert(0, \"/app\")\n\n"

// kataTestFile writes the pytest module. nop selects a nop_passes variant:
// "guarded_import" (tests return early when the solution cannot be
// imported) or "self_assert" (tests compare the expected value with itself
// and never import the solution).
func kataTestFile(style int, fn string, tests []kcase, nop string) string {
	var b strings.Builder
	switch nop {
	case "self_assert":
		b.WriteString("# Expected results of " + fn + ", generated from the reference implementation.\n")
		for i, t := range tests {
			fmt.Fprintf(&b, "\n\ndef test_%s_%d():\n    expected = %s\n    result = %s  # %s(%s)\n    assert result == expected\n", fn, i+1, t.out, t.out, fn, t.args)
		}
		return b.String()
	case "guarded_import":
		b.WriteString(kataTestHeader)
		fmt.Fprintf(&b, "try:\n    from solution import %s\nexcept ImportError:  # the agent has not written the solution yet\n    %s = None\n", fn, fn)
		for i, t := range tests {
			fmt.Fprintf(&b, "\n\ndef test_%s_%d():\n    if %s is None:\n        return\n    assert %s(%s) == %s\n", fn, i+1, fn, fn, t.args, t.out)
		}
		return b.String()
	}
	b.WriteString(kataTestHeader)
	fmt.Fprintf(&b, "from solution import %s\n", fn)
	switch style {
	case 0:
		for i, t := range tests {
			fmt.Fprintf(&b, "\n\ndef test_%s_%d():\n    assert %s(%s) == %s\n", fn, i+1, fn, t.args, t.out)
		}
	case 1:
		b.WriteString("\nCASES = [\n")
		for _, t := range tests {
			fmt.Fprintf(&b, "    ((%s,), %s),\n", t.args, t.out)
		}
		fmt.Fprintf(&b, "]\n\n\ndef test_%s_cases():\n    for args, expected in CASES:\n        assert %s(*args) == expected, (args, expected)\n", fn, fn)
	default:
		half := (len(tests) + 1) / 2
		groups := [][]kcase{tests[:half], tests[half:]}
		for gi, g := range groups {
			fmt.Fprintf(&b, "\n\ndef test_%s_%s():\n", fn, []string{"basic", "more"}[gi])
			for _, t := range g {
				fmt.Fprintf(&b, "    assert %s(%s) == %s\n", fn, t.args, t.out)
			}
		}
	}
	return b.String()
}
