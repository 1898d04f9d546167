package poolgen

import (
	"fmt"
	"math/rand/v2"
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
