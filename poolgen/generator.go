package poolgen

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/otcurate/otcurate/bundle"
)

const reservoirSize = 256

type generator struct {
	o     Options
	width int
	kinds []string  // defect kinds with a positive rate, sorted
	cum   []float64 // cumulative rates

	// Good tasks seen so far, reservoir-sampled, for the duplicate defect.
	reservoir []Task
	goodSeen  int
	resRand   *rand.Rand
	tmp       string // HostCheck scratch directory
}

func newGenerator(o Options) *generator {
	g := &generator{o: o, width: pathWidth(o.N), resRand: taskRand(o.Seed, -1, 7)}
	total := 0.0
	for _, k := range DefectKinds() {
		if v := o.Rates[k]; v > 0 {
			total += v
			g.kinds = append(g.kinds, k)
			g.cum = append(g.cum, total)
		}
	}
	return g
}

// plan is one task before the Python batch.
type plan struct {
	i      int
	path   string
	r      *rand.Rand
	defect string
	kata   *kataPlan
	shell  *shellPlan
	pym    *pymPlan
	job    int // index in the batch request (kata or shell list)
}

func (g *generator) pickDefect(r *rand.Rand) string {
	u := r.Float64()
	for i, c := range g.cum {
		if u < c {
			return g.kinds[i]
		}
	}
	return ""
}

func (g *generator) plan(i int) *plan {
	r := taskRand(g.o.Seed, i, 0)
	p := &plan{i: i, r: r, path: fmt.Sprintf("%s-%0*d", g.o.PathPrefix, g.width, i)}
	if g.o.PyMethodsShare > 0 && chance(taskRand(g.o.Seed, i, 3), g.o.PyMethodsShare) {
		p.pym = g.planPyMethods(i, p.path)
		p.defect = p.pym.defect
		return p
	}
	p.defect = g.pickDefect(r)
	name := p.path
	kata := chance(r, g.o.KataShare)
	switch {
	case kata && g.o.Balanced:
		f, v := balancedPick(g.o.Seed, i, kataVariants)
		p.kata = planKataVariant(r, kataFamilies[f], v, name, p.defect == DefectWrongOracle)
	case kata:
		p.kata = planKata(r, name, p.defect == DefectWrongOracle)
	default:
		p.shell = g.planShellTask(r, i, name)
	}
	return p
}

// kataVariants and shellVariants list every (family, variant) pair.
var (
	kataVariants = func() (out [][2]int) {
		for f, fam := range kataFamilies {
			for v := range fam.Variants {
				out = append(out, [2]int{f, v})
			}
		}
		return out
	}()
	shellVariants = func() (out [][2]int) {
		for t, tmpl := range shellTemplates {
			for v := range tmpl.Variants {
				out = append(out, [2]int{t, v})
			}
		}
		return out
	}()
)

// balancedPick is task i's (family, variant) in shuffled rounds over pairs:
// round i/len(pairs) is a permutation drawn from the seed and the round
// alone, so a task's pick does not depend on the chunking.
func balancedPick(seed int64, i int, pairs [][2]int) (int, int) {
	round, pos := i/len(pairs), i%len(pairs)
	perm := rand.New(rand.NewPCG(uint64(seed)^0x3c6ef372fe94f82b, uint64(round))).Perm(len(pairs))
	pr := pairs[perm[pos]]
	return pr[0], pr[1]
}

type chunkResult struct {
	plans []*plan
	resp  *batchResponse
	err   error
}

// planChunk draws the tasks start..end-1 and runs their Python batch. It
// only reads the options, so it runs ahead of the sequential build.
func (g *generator) planChunk(ctx context.Context, start, end int) chunkResult {
	plans := make([]*plan, 0, end-start)
	req := &batchRequest{Codes: map[string]string{}}
	for i := start; i < end; i++ {
		p := g.plan(i)
		if p.pym != nil {
			p.job = len(req.Kata)
			p.pym.k.job(req)
		} else if p.kata != nil {
			p.job = len(req.Kata)
			p.kata.job(req)
		} else {
			p.job = len(req.Shell)
			p.shell.job(req)
		}
		plans = append(plans, p)
	}
	resp, err := runBatch(ctx, g.o.Python, req)
	return chunkResult{plans: plans, resp: resp, err: err}
}

// run plans the chunks and computes their Python batches ahead, up to
// `workers` at a time (one python3 process each), while the chunks are
// built and emitted strictly in order.
func (g *generator) run(ctx context.Context, emit func(Task) error) error {
	ctx, cancel := context.WithCancel(ctx)
	n := (g.o.N + g.o.ChunkSize - 1) / g.o.ChunkSize
	workers := max(1, min(2, runtime.GOMAXPROCS(0)))
	results := make([]chan chunkResult, n)
	for k := range results {
		results[k] = make(chan chunkResult, 1)
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; k < n; k++ {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				start := k * g.o.ChunkSize
				results[k] <- g.planChunk(ctx, start, min(start+g.o.ChunkSize, g.o.N))
			}(k)
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
		if g.tmp != "" {
			os.RemoveAll(g.tmp)
		}
	}()
	for k := 0; k < n; k++ {
		var cr chunkResult
		select {
		case cr = <-results[k]:
		case <-ctx.Done():
			return ctx.Err()
		}
		<-sem
		if cr.err != nil {
			return cr.err
		}
		for _, p := range cr.plans {
			if err := ctx.Err(); err != nil {
				return err
			}
			t, err := g.build(p, cr.resp)
			if err != nil {
				return err
			}
			if g.o.HostCheck && t.Label.Family != FamilyPyMethods && hostCheckable(t.Label.Defect) {
				if err := g.hostCheck(ctx, t); err != nil {
					return err
				}
			}
			if err := emit(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// hostCheckable lists the labels whose oracle and verifier work as a
// correct task's do (the defect is elsewhere, or not observable on the
// host).
func hostCheckable(defect string) bool {
	switch defect {
	case "", DefectBuildSlow, DefectTestsInImage, DefectInstructionReveals:
		return true
	}
	return false
}

func (g *generator) hostCheck(ctx context.Context, t Task) error {
	if g.tmp == "" {
		dir, err := os.MkdirTemp("", "poolgen-hostcheck-")
		if err != nil {
			return err
		}
		g.tmp = dir
	}
	return hostCheck(ctx, g.tmp, g.o.Python, t)
}

func (g *generator) addGood(t Task) {
	g.goodSeen++
	if len(g.reservoir) < reservoirSize {
		g.reservoir = append(g.reservoir, t)
		return
	}
	if j := g.resRand.IntN(g.goodSeen); j < reservoirSize {
		g.reservoir[j] = t
	}
}

func (g *generator) build(p *plan, resp *batchResponse) (Task, error) {
	if p.pym != nil {
		return g.buildPyMethods(p, &resp.Kata[p.job])
	}
	r := p.r
	defect := p.defect
	if defect == DefectDuplicate {
		if len(g.reservoir) == 0 {
			defect = "" // nothing to copy yet: the task stays good
		} else {
			// The copy always sorts after its original, because paths are
			// zero-padded to a fixed width and originals come earlier. (If a
			// consumer renamed tasks so that the copy sorted first, the
			// dedup stage would keep the copy and drop the original; the
			// label stays on the copy, which is the one generated second.)
			orig := g.reservoir[r.IntN(len(g.reservoir))]
			lab := orig.Label
			lab.Path = p.path
			lab.Defect = DefectDuplicate
			lab.DuplicateOf = orig.Path
			lab.ExpectedStage = StageDedup
			lab.ExpectedReason = ReasonDuplicateContent
			lab.Params = nil
			return Task{Path: p.path, Entries: append([]bundle.Entry(nil), orig.Entries...), Label: lab}, nil
		}
	}

	var d *draft
	var kb *kataBuilt
	var sb *shellBuilt
	var err error
	if p.kata != nil {
		if kb, err = p.kata.build(&resp.Kata[p.job]); err != nil {
			return Task{}, err
		}
		d = kb.d
	} else {
		if sb, err = p.shell.build(&resp.Shell[p.job]); err != nil {
			return Task{}, err
		}
		d = sb.d
	}
	label := Label{Path: p.path, Family: d.family, Template: d.template, Dockerfile: d.dockerID}
	params := map[string]any{}
	if defect != "" {
		info := defects[defect]
		label.Defect, label.ExpectedStage, label.ExpectedReason = defect, info.stage, info.reason
		applyDraftDefect(defect, r, d, kb, sb, p, params)
		label.Dockerfile = d.dockerID
	}
	entries := d.entries()
	task := Task{Path: p.path, Label: label}
	switch {
	case defect == "":
		task.Entries = entries
		g.addGood(task)
	case defects[defect].blob:
		if task.Blob, err = codecBlob(defect, r, entries, params); err != nil {
			return Task{}, err
		}
	case defects[defect].stage == StageValidate:
		if task.Entries, err = applyEntryDefect(defect, r, entries, params); err != nil {
			return Task{}, err
		}
	default:
		task.Entries = entries
	}
	if len(params) > 0 {
		task.Label.Params = params
	}
	return task, nil
}

// applyDraftDefect injects the runtime, environment and lint defects into
// the draft. Codec and structural defects leave the draft alone.
func applyDraftDefect(defect string, r *rand.Rand, d *draft, kb *kataBuilt, sb *shellBuilt, p *plan, params map[string]any) {
	kata := kb != nil
	v := &d.verifier
	switch defect {
	case DefectFlakyVerifier:
		prob := pick(r, []float64{0.05, 0.1, 0.2, 0.3, 0.5})
		params["flake_prob"] = prob
		v.flakeThr = int(math.Round(prob * 32768))
	case DefectSlowVerifier:
		sec := rint(r, 20, 60)
		params["sleep_sec"] = sec
		v.prelude = slowPrelude(sec)
	case DefectHangingVerifier:
		k := r.IntN(len(hangPreludes))
		params["mode"] = []string{"sleep_infinity", "wait_for_file", "tail_follow"}[k]
		v.prelude = hangPreludes[k]
	case DefectNopPasses:
		if kata {
			mode := pick(r, []string{"guarded_import", "self_assert", "always_one"})
			params["mode"] = mode
			if mode == "always_one" {
				v.reward = "nop:always_one"
			} else {
				d.tests["test_solution.py"] = kataTestFile(p.kata.testStyle, p.kata.variant().Fn, kb.tests, mode)
			}
		} else {
			mode := pick(r, []string{"always_one", "self_compare", "input_exists"})
			params["mode"] = mode
			v.reward = "nop:" + mode
		}
	case DefectWrongOracle:
		if kata {
			params["mode"] = kb.wrongMode
			d.solveSh, d.solution = kataOracle(p.kata.oracleFile, kb.wrongSrc)
		} else {
			params["mode"] = "mutation"
			d.solveSh = p.shell.wrongOracle()
		}
	case DefectRewardMissing:
		mode := pick(r, []string{"wrong_name", "wrong_dir", "stdout_only", "early_exit"})
		params["mode"] = mode
		v.reward = "missing:" + mode
	case DefectRewardGarbage:
		mode := pick(r, []string{"passed", "nan", "fraction", "bool", "redirect"})
		params["mode"] = mode
		v.reward = "garbage:" + mode
	case DefectBuildFails:
		bf := pick(r, buildFailLines)
		params["mode"] = bf.mode
		d.dockerfile = insertBeforeWorkdir(d.dockerfile, bf.line)
		d.dockerID += "+" + defect
	case DefectBuildSlow:
		sec := rint(r, 120, 300)
		params["sleep_sec"] = sec
		d.dockerfile = insertAfterFrom(d.dockerfile, fmt.Sprintf("# Warm the package caches.\nRUN sleep %d\n", sec))
		d.dockerID += "+" + defect
	case DefectNetworkVerifier:
		k := r.IntN(3)
		if kata {
			v.prelude = kataNetworkPreludes[k]
			params["mode"] = []string{"pip_install", "curl_installer", "apt_install"}[k]
		} else {
			v.prelude = shellNetworkPreludes[k]
			params["mode"] = []string{"apt_install", "curl_download", "pip_install"}[k]
		}
	case DefectInstructionReveals:
		if kata {
			d.instruction += revealSection(p.kata.variant().Fn, kb.tests)
		} else {
			d.instruction += shellRevealSection(sb.expected)
		}
	case DefectNoSolution:
		d.solveSh, d.solution = "", nil
	}
	d.testSh = v.script()
	if defect == DefectTestsInImage {
		// TB1-style migration leftover: the tests are part of the build
		// context and copied into the image.
		if d.env == nil {
			d.env = map[string]string{}
		}
		d.env["tests/test.sh"] = d.testSh
		for k, val := range d.tests {
			d.env["tests/"+k] = val
		}
		d.dockerfile = insertBeforeWorkdir(d.dockerfile, "COPY tests/ /tests/\n")
		d.dockerID += "+" + defect
	}
}

// applyEntryDefect removes or breaks required files (the structural kinds
// that the validator reports after a successful decode).
func applyEntryDefect(defect string, r *rand.Rand, entries []bundle.Entry, params map[string]any) ([]bundle.Entry, error) {
	var out []bundle.Entry
	rename := func(match func(string) bool, to func(string) string) {
		for _, e := range entries {
			if match(e.Name) {
				if to == nil {
					continue
				}
				e.Name = to(e.Name)
			}
			out = append(out, e)
		}
	}
	is := func(name string) func(string) bool { return func(s string) bool { return s == name } }
	const (
		absent = "absent"
	)
	switch defect {
	case DefectMissingInstruction:
		mode := pick(r, []string{absent, "renamed"})
		params["mode"] = mode
		if mode == absent {
			rename(is("instruction.md"), nil)
		} else {
			to := pick(r, []string{"INSTRUCTIONS.md", "instruction.txt", "prompt.md"})
			rename(is("instruction.md"), func(string) string { return to })
		}
	case DefectMissingTaskToml:
		mode := pick(r, []string{absent, "renamed"})
		params["mode"] = mode
		if mode == absent {
			rename(is("task.toml"), nil)
		} else {
			to := pick(r, []string{"task.yaml", "config.toml", "task.toml.bak"})
			rename(is("task.toml"), func(string) string { return to })
		}
	case DefectMissingEnvironment:
		mode := pick(r, []string{absent, "at_root"})
		params["mode"] = mode
		inEnv := func(s string) bool { return strings.HasPrefix(s, "environment/") }
		if mode == absent {
			rename(inEnv, nil)
		} else { // TB1 layout: Dockerfile and seeds in the task root
			rename(inEnv, func(s string) string { return strings.TrimPrefix(s, "environment/") })
		}
	case DefectMissingTestScript:
		mode := pick(r, []string{absent, "tb1_name"})
		params["mode"] = mode
		if mode == absent {
			rename(is("tests/test.sh"), nil)
		} else {
			to := pick(r, []string{"tests/run-tests.sh", "run-tests.sh", "tests/run_tests.sh"})
			rename(is("tests/test.sh"), func(string) string { return to })
		}
	case DefectInvalidTaskToml:
		for _, e := range entries {
			if e.Name == "task.toml" {
				text, mode := breakTaskToml(r, string(e.Data))
				params["mode"] = mode
				e.Data = []byte(text)
			}
			out = append(out, e)
		}
	default:
		return nil, fmt.Errorf("poolgen: %s is not a structural defect", defect)
	}
	return out, nil
}

// buildPyMethods builds a pymethods task: its defects are written into the
// draft by the family's builder, and its label expects the oracle-free
// gate's verdict.
func (g *generator) buildPyMethods(p *plan, res *kataResult) (Task, error) {
	pb, err := p.pym.build(res)
	if err != nil {
		return Task{}, err
	}
	d := pb.d
	label := Label{Path: p.path, Family: d.family, Template: d.template, Dockerfile: d.dockerID, Params: pb.params}
	if p.defect != "" {
		label.Defect, label.ExpectedStage, label.ExpectedReason = p.defect, StageFlaky, pyMethodsDefects[p.defect].reason
	}
	task := Task{Path: p.path, Entries: d.entries(), Label: label, Solution: pb.solution}
	if p.defect == "" {
		g.addGood(task)
	}
	return task, nil
}
