package poolgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
)

// shellPlan is an nl2bash task whose seeds are drawn but whose expected
// output is still to be computed by the Python batch.
type shellPlan struct {
	t        *shellTemplate
	v        int
	files    map[string]string
	params   map[string]string
	instr    int
	preamble int
	verStyle int
	docker   dockerfileDef
	toml     string
	// text replaces the variant's phrasings when set (a paraphrase from
	// ShellSubset.Paraphrases); it is shown without a preamble.
	text string
}

var shellPreambles = []string{
	"",
	"",
	"You are working in a Linux shell. ",
	"Using standard command-line tools, ",
}

func planShell(r *rand.Rand, name string) *shellPlan {
	t := shellTemplates[r.IntN(len(shellTemplates))]
	return planShellVariant(r, t, r.IntN(len(t.Variants)), name)
}

func planShellVariant(r *rand.Rand, t *shellTemplate, v int, name string) *shellPlan {
	p := &shellPlan{t: t, v: v}
	vv := t.Variants[p.v]
	p.files, p.params = vv.Gen(r)
	p.instr = r.IntN(len(vv.Instr))
	p.preamble = r.IntN(len(shellPreambles))
	p.verStyle = r.IntN(3)
	p.docker = pickDockerfile(r, shellDockerfiles)
	p.toml = genTaskToml(r, tomlMeta{difficulty: pick(r, []string{"easy", "easy", "medium"}), category: t.Category,
		tags: []string{"bash", "nl2bash", t.Category}}, name)
	return p
}

func (p *shellPlan) variant() shellVariant { return p.t.Variants[p.v] }

func (p *shellPlan) model() string { return fmt.Sprintf("%s/v%d", p.t.ID, p.v+1) }

func (p *shellPlan) template() string { return "nl2bash/" + p.model() }

func (p *shellPlan) job(req *batchRequest) {
	req.Shell = append(req.Shell, shellJob{Model: p.model(), Files: p.files, Params: p.params})
}

func (p *shellPlan) oracle() string { return shellScript(fill(p.variant().Oracle, p.params)) }

func (p *shellPlan) wrongOracle() string { return shellScript(fill(p.variant().Wrong, p.params)) }

func shellScript(cmd string) string {
	return "#!/bin/bash\n# Oracle: reference command for this task.\nexport LC_ALL=C\nmkdir -p /output\n" + cmd + "\n"
}

type shellBuilt struct {
	d        *draft
	expected string
}

func (p *shellPlan) build(res *shellResult) (*shellBuilt, error) {
	if res.Error != "" {
		return nil, fmt.Errorf("poolgen: model of %s failed: %s", p.template(), res.Error)
	}
	if strings.TrimSpace(res.Out) == "" {
		return nil, fmt.Errorf("poolgen: %s: empty expected output", p.template())
	}
	vv := p.variant()
	env := map[string]string{}
	for k, v := range p.files {
		env["seeds/"+k] = v
	}
	instr := shellPreambles[p.preamble]
	text := fill(vv.Instr[p.instr], p.params)
	if p.text != "" {
		instr, text = "", fill(p.text, p.params)
		if placeholder.MatchString(text) {
			return nil, fmt.Errorf("poolgen: %s: paraphrase %q leaves a placeholder unfilled", p.template(), p.text)
		}
	}
	if strings.HasSuffix(instr, ", ") {
		if strings.HasPrefix(text, "`") {
			instr = "" // "Using ..., `/app/data/x` is ..." does not read
		} else {
			text = strings.ToLower(text[:1]) + text[1:]
		}
	}
	d := &draft{
		family:      FamilyNL2Bash,
		template:    p.template(),
		dockerID:    p.docker.id,
		instruction: instr + text + "\n",
		taskToml:    p.toml,
		dockerfile:  p.docker.text,
		env:         env,
		tests:       map[string]string{"expected_output.txt": res.Out + "\n"},
		verifier:    verifierSpec{kata: false, style: p.verStyle, probe: fill(vv.Probe, p.params)},
		solveSh:     p.oracle(),
	}
	d.testSh = d.verifier.script()
	return &shellBuilt{d: d, expected: res.Out}, nil
}

func shellRevealSection(expected string) string {
	return "\nThe checker expects exactly this content (leading/trailing blanks on each line are ignored):\n\n```\n" + expected + "\n```\n"
}

// placeholder matches an unfilled @KEY@.
var placeholder = regexp.MustCompile(`@[A-Z]+@`)

// ShellSubset restricts the nl2bash tasks a pool draws, so that splits can
// be held out by phrasing or by whole variant (scripts/proof-of-learning.sh):
// a training pool drawn with Phrasings [1] shares no instruction template
// with a test pool drawn with Phrasings [2]. The zero value draws every
// variant and phrasing, exactly as before the subset existed.
type ShellSubset struct {
	// Variants keeps only these template variants: a template id
	// ("count_lines", all its variants) or a variant id ("count_lines/v2").
	// Empty keeps every variant.
	Variants []string
	// ExcludeVariants drops these (same forms), after Variants.
	ExcludeVariants []string
	// Phrasings keeps only these instruction phrasings, 1-based indices
	// into each variant's alternative phrasings. Empty keeps all.
	Phrasings []int
	// Paraphrases, when set, replace the generator's phrasings: task i
	// uses entry i mod len (so the pool cycles through them) with its
	// variant's seed files, oracle and verifier, and no preamble. Variants,
	// ExcludeVariants and Phrasings must then be empty.
	Paraphrases []Paraphrase
}

// Paraphrase is an instruction written independently of the generator's
// phrasings for one variant. Text may use the variant's placeholders
// (@PATH@, @PATTERN@, ...), filled from the drawn parameters.
type Paraphrase struct {
	Variant string `json:"variant"` // e.g. "count_lines/v1"
	Text    string `json:"text"`
}

func (s ShellSubset) empty() bool {
	return len(s.Variants) == 0 && len(s.ExcludeVariants) == 0 && len(s.Phrasings) == 0 && len(s.Paraphrases) == 0
}

// ShellVariantIDs lists every nl2bash variant id ("count_lines/v1", ...)
// in generator order.
func ShellVariantIDs() []string {
	out := make([]string, 0, len(shellVariants))
	for _, pr := range shellVariants {
		out = append(out, fmt.Sprintf("%s/v%d", shellTemplates[pr[0]].ID, pr[1]+1))
	}
	return out
}

// matchVariant reports whether selector (a template or variant id) names
// variant v of template t.
func matchVariant(selector string, t *shellTemplate, v int) bool {
	return selector == t.ID || selector == fmt.Sprintf("%s/v%d", t.ID, v+1)
}

// resolveVariant finds the (template, variant) pair of a variant id.
func resolveVariant(id string) (int, int, error) {
	for _, pr := range shellVariants {
		if fmt.Sprintf("%s/v%d", shellTemplates[pr[0]].ID, pr[1]+1) == id {
			return pr[0], pr[1], nil
		}
	}
	return 0, 0, fmt.Errorf("poolgen: unknown nl2bash variant %q (see ShellVariantIDs)", id)
}

// pairs returns the (template, variant) pairs the subset keeps.
func (s ShellSubset) pairs() [][2]int {
	var out [][2]int
	for _, pr := range shellVariants {
		t := shellTemplates[pr[0]]
		keep := len(s.Variants) == 0
		for _, sel := range s.Variants {
			keep = keep || matchVariant(sel, t, pr[1])
		}
		for _, sel := range s.ExcludeVariants {
			keep = keep && !matchVariant(sel, t, pr[1])
		}
		if keep {
			out = append(out, pr)
		}
	}
	return out
}

// Validate checks every selector names a template or variant, every
// phrasing exists in every kept variant, and at least one variant is kept.
func (s ShellSubset) Validate() error {
	if len(s.Paraphrases) > 0 {
		if len(s.Variants)+len(s.ExcludeVariants)+len(s.Phrasings) > 0 {
			return errors.New("poolgen: paraphrases replace the variant and phrasing selection; do not combine them")
		}
		for i, p := range s.Paraphrases {
			if _, _, err := resolveVariant(p.Variant); err != nil {
				return fmt.Errorf("paraphrase %d: %w", i+1, err)
			}
			if strings.TrimSpace(p.Text) == "" {
				return fmt.Errorf("poolgen: paraphrase %d (%s) is empty", i+1, p.Variant)
			}
		}
		return nil
	}
	for _, sel := range append(append([]string{}, s.Variants...), s.ExcludeVariants...) {
		found := false
		for _, pr := range shellVariants {
			found = found || matchVariant(sel, shellTemplates[pr[0]], pr[1])
		}
		if !found {
			return fmt.Errorf("poolgen: unknown nl2bash template or variant %q", sel)
		}
	}
	pairs := s.pairs()
	if len(pairs) == 0 {
		return errors.New("poolgen: the nl2bash variant selection keeps no variant")
	}
	for _, ph := range s.Phrasings {
		for _, pr := range pairs {
			t := shellTemplates[pr[0]]
			if n := len(t.Variants[pr[1]].Instr); ph < 1 || ph > n {
				return fmt.Errorf("poolgen: phrasing %d: %s/v%d has %d phrasings", ph, t.ID, pr[1]+1, n)
			}
		}
	}
	return nil
}

// planShellTask draws shell task i under the options' ShellSubset (and
// Balanced). The empty subset draws exactly what it always did.
func (g *generator) planShellTask(r *rand.Rand, i int, name string) *shellPlan {
	s := g.o.Shell
	switch {
	case len(s.Paraphrases) > 0:
		pp := s.Paraphrases[i%len(s.Paraphrases)]
		t, v, _ := resolveVariant(pp.Variant) // Validate ran in Generate
		p := planShellVariant(r, shellTemplates[t], v, name)
		p.text = pp.Text
		return p
	case s.empty() && g.o.Balanced:
		t, v := balancedPick(g.o.Seed, i, shellVariants)
		return planShellVariant(r, shellTemplates[t], v, name)
	case s.empty():
		return planShell(r, name)
	}
	pairs := s.pairs()
	var pr [2]int
	if g.o.Balanced {
		pr[0], pr[1] = balancedPick(g.o.Seed, i, pairs)
	} else {
		pr = pairs[r.IntN(len(pairs))]
	}
	p := planShellVariant(r, shellTemplates[pr[0]], pr[1], name)
	if len(s.Phrasings) > 0 {
		p.instr = s.Phrasings[r.IntN(len(s.Phrasings))] - 1
	}
	return p
}

// ReadParaphrases reads a JSON-lines file of Paraphrase records (blank
// lines and lines starting with # are skipped).
func ReadParaphrases(path string) ([]Paraphrase, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Paraphrase
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var p Paraphrase
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no paraphrase", path)
	}
	return out, nil
}
