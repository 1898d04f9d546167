package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/otcurate/otcurate/atomicfile"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/rundir"
)

// ReportFile is the run directory's HTML report.
const ReportFile = "report.html"

// BuildReport is what report.html shows, computed from a run directory's
// summary.json, decisions.jsonl and tasks.parquet only: every number in it
// can be traced to lines of those files.
type BuildReport struct {
	Dir     string
	Summary *pipeline.Summary
	// Drops and Errors count decisions by stage and reason.
	Drops, Errors []ReasonCount
	// Examples holds the first decision of each (stage, reason) that did
	// not keep the task, with its log excerpt.
	Examples []pipeline.Decision
	// Environments are the unique environments the env stage measured.
	Environments []EnvStat
	// EnvTasks is how many tasks reached the env stage.
	EnvTasks int
	// Durations are per-task distributions (seconds) by name.
	Durations []Distribution
	// Runs and SandboxSeconds are the sandbox work of this run; Reused the
	// verdicts served from the ledger.
	Runs           int64
	SandboxSeconds float64
	Reused         int64
	// Proofs splits the verifier gate's decisions by the proof they stood
	// on (empty when no decision records one), in the order of
	// ProofKinds; UnprovenKept is how many tasks of the output have
	// proof none.
	Proofs       []ProofRow
	UnprovenKept int64
	// ProofMismatch names a disagreement between summary.json's
	// kept_by_proof and what decisions.jsonl says (it should never happen).
	ProofMismatch string
}

// ProofRow is one proof kind's line of the report, counted from
// decisions.jsonl: the gate's decisions with that "proof", the tasks of
// the output among them (no decision of any stage dropped them), and the
// sandbox work the gate spent on them in this run.
type ProofRow struct {
	Proof, Meaning string
	InOutput       int64 // tasks of the output (0 when the run was interrupted)
	Kept, Dropped  int64 // the gate's verdicts
	Runs           int64
	SandboxSeconds float64
	FromLedger     int64
}

// ProofKind is a verifier gate proof kind and what it means for a kept task.
type ProofKind struct{ Proof, Meaning string }

// ProofKinds are the verifier gate's proof kinds, in the report's order.
var ProofKinds = []ProofKind{
	{filters.ProofOracle, "the bundle's own solution/solve.sh scored 1"},
	{filters.ProofSupplied, "a solution supplied beside the pool (solution_binary, --solutions, RUN_DIR/solutions) scored 1"},
	{filters.ProofPolicy, "a policy attempt scored 1 and its replay reproduced the reward"},
	{filters.ProofNone, "unproven: only the untouched environment was checked (scores 0); nothing showed a state the verifier scores 1"},
}

// proofTally is what readDecisions gathers for the proof rows.
type proofTally struct {
	gate    pipeline.StageSummary // its Proofs: the gate's decisions, counted as the engine counts them
	proofOf map[int64]string      // task index → proof of its gate decision
	dropped map[int64]bool        // tasks some decision did not keep
}

// ReasonCount is a number of decisions of one stage with one reason.
type ReasonCount struct {
	Stage, Reason string
	Count         int64
}

// EnvStat is one unique environment: how many tasks use it and what its
// measurement gave.
type EnvStat struct {
	Hash                    string
	Tasks                   int
	Verdict, Reason         string
	Build, Start, Teardown  float64
	Measured                bool // false when the measuring decision was not found (e.g. served from the ledger without evidence)
	ExamplePath, FirstIndex string
}

// Distribution is a set of per-task durations.
type Distribution struct {
	Name   string
	Values []float64
}

// Quantile returns the q-quantile (nearest rank) of the values.
func (d Distribution) Quantile(q float64) float64 {
	if len(d.Values) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(d.Values)))) - 1
	return d.Values[max(0, min(i, len(d.Values)-1))]
}

// LoadBuildReport reads a run directory written by build or filter.
func LoadBuildReport(runDir string) (*BuildReport, error) {
	sum, err := readSummary(runDir)
	if err != nil {
		return nil, err
	}
	r := &BuildReport{Dir: runDir}
	// The manifest is read only when an env decision needs its
	// environment hash: runs without the env stage skip it.
	envOf := lazyEnvHashes(filepath.Join(runDir, rundir.ManifestFile))
	if err := r.readDecisions(filepath.Join(runDir, rundir.DecisionsFile), envOf); err != nil {
		return nil, err
	}
	r.setSummary(sum)
	return r, nil
}

func readSummary(runDir string) (*pipeline.Summary, error) {
	data, err := os.ReadFile(filepath.Join(runDir, rundir.SummaryFile))
	if err != nil {
		return nil, fmt.Errorf("report: %w (is %s a build run directory?)", err, runDir)
	}
	sum := &pipeline.Summary{}
	if err := json.Unmarshal(data, sum); err != nil {
		return nil, fmt.Errorf("report: %s: %w", rundir.SummaryFile, err)
	}
	return sum, nil
}

func (r *BuildReport) setSummary(sum *pipeline.Summary) {
	r.Summary = sum
	r.Runs, r.SandboxSeconds, r.Reused = sum.SandboxSpend()
	r.UnprovenKept = 0
	r.ProofMismatch = ""
	if sum.Interrupted {
		for i := range r.Proofs {
			r.Proofs[i].InOutput = 0 // the run wrote no output
		}
		return
	}
	fromDecisions := map[string]int64{}
	for _, p := range r.Proofs {
		if p.InOutput > 0 {
			fromDecisions[p.Proof] = p.InOutput
		}
		if p.Proof == filters.ProofNone {
			r.UnprovenKept = p.InOutput
		}
	}
	summary := map[string]int64{}
	for k, n := range sum.KeptByProof {
		if n > 0 {
			summary[k] = n
		}
	}
	if !maps.Equal(summary, fromDecisions) {
		r.ProofMismatch = fmt.Sprintf("summary.json says the output holds %v by proof, decisions.jsonl %v", summary, fromDecisions)
	}
}

// add counts one decision: its proof, if any, and whether it dropped the task.
func (pt *proofTally) add(d pipeline.Decision) {
	if d.Verdict != pipeline.Keep {
		pt.dropped[d.Index] = true
	}
	if d.Proof == "" || d.Verdict == pipeline.Error {
		return
	}
	pt.proofOf[d.Index] = d.Proof
	pt.gate.AddProof(d.Proof, d.Verdict, d.Evidence)
}

// finish returns the rows: every known kind once a decision records a
// proof (so a kind with no task reads 0), then any other kind by name.
func (pt *proofTally) finish() []ProofRow {
	stats := pt.gate.Proofs
	if len(stats) == 0 {
		return nil
	}
	inOutput := map[string]int64{}
	for i, p := range pt.proofOf {
		if !pt.dropped[i] {
			inOutput[p]++
		}
	}
	row := func(proof, meaning string) ProofRow {
		r := ProofRow{Proof: proof, Meaning: meaning, InOutput: inOutput[proof]}
		if p := stats[proof]; p != nil {
			r.Kept, r.Dropped, r.Runs, r.SandboxSeconds, r.FromLedger = p.Kept, p.Dropped, p.Runs, p.SandboxSeconds, p.FromLedger
		}
		return r
	}
	var out []ProofRow
	for _, k := range proofOrder(stats) {
		out = append(out, row(k, proofMeaning(k)))
	}
	return out
}

// proofOrder lists every known proof kind (ProofKinds, in order) and then
// the other keys of m by name.
func proofOrder[V any](m map[string]V) []string {
	var out []string
	for _, k := range ProofKinds {
		out = append(out, k.Proof)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if proofMeaning(k) == "" {
			out = append(out, k)
		}
	}
	return out
}

// proofMeaning is what a known proof kind means, "" for another.
func proofMeaning(proof string) string {
	for _, k := range ProofKinds {
		if k.Proof == proof {
			return k.Meaning
		}
	}
	return ""
}

// PendingReport is a build report whose decisions are being read while
// the run finishes (see StartBuildReport).
type PendingReport struct {
	runDir string
	done   chan struct{}
	r      *BuildReport
	err    error
}

// StartBuildReport reads RUN_DIR/decisions.jsonl in the background, as soon
// as the stages have written it, so the report's reading overlaps the
// writing of the output and the manifest. envOf gives a task's environment
// hash (what the manifest will say; the manifest may not exist yet).
// Finish completes it once summary.json is written; the page is the one
// WriteBuildReport would write from the finished directory.
func StartBuildReport(runDir string, envOf func(int64) (string, error)) *PendingReport {
	p := &PendingReport{runDir: runDir, done: make(chan struct{}), r: &BuildReport{Dir: runDir}}
	go func() {
		defer close(p.done)
		p.err = p.r.readDecisions(filepath.Join(runDir, rundir.DecisionsFile), envOf)
	}()
	return p
}

// Finish waits for the decisions, reads summary.json and writes
// RUN_DIR/report.html.
func (p *PendingReport) Finish() error {
	<-p.done
	if p.err != nil {
		return p.err
	}
	sum, err := readSummary(p.runDir)
	if err != nil {
		return err
	}
	p.r.setSummary(sum)
	return p.r.write()
}

// lazyEnvHashes returns a lookup of task index to environment hash that
// reads the manifest on its first call. A missing manifest maps nothing.
func lazyEnvHashes(name string) func(int64) (string, error) {
	var m map[int64]string
	var err error
	loaded := false
	return func(i int64) (string, error) {
		if !loaded {
			loaded = true
			m, err = readEnvHashes(name)
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		}
		return m[i], err
	}
}

// readEnvHashes maps task index to environment hash from the manifest.
func readEnvHashes(name string) (map[int64]string, error) {
	tasks, err := rundir.ReadManifest(name, nil, nil)
	if err != nil {
		return nil, err
	}
	return envHashIndex(tasks), nil
}

// envHashIndex maps task index to environment hash (tasks without one
// are left out, as the manifest leaves them null).
func envHashIndex(tasks []*pipeline.Task) map[int64]string {
	out := make(map[int64]string, len(tasks))
	for _, t := range tasks {
		if t.EnvHash != "" {
			out[t.Index] = t.EnvHash
		}
	}
	return out
}

// EnvHashesOf is the environment-hash lookup for StartBuildReport from a
// run's tasks in memory: what the manifest will record. The index is built
// on the first lookup (only env-stage decisions need one).
func EnvHashesOf(tasks []*pipeline.Task) func(int64) (string, error) {
	var byIndex map[int64]string
	return func(i int64) (string, error) {
		if byIndex == nil {
			byIndex = envHashIndex(tasks)
		}
		return byIndex[i], nil
	}
}

func (r *BuildReport) readDecisions(name string, envOf func(int64) (string, error)) error {
	drops, errs := map[[2]string]int64{}, map[[2]string]int64{}
	seen := map[[2]string]bool{}
	envs := map[string]*EnvStat{}
	dist := map[string][]float64{}
	pt := &proofTally{proofOf: map[int64]string{}, dropped: map[int64]bool{}}
	if err := rundir.EachDecisionWhere(name, filters.Layout(), mayCount, func(d pipeline.Decision) error {
		pt.add(d)
		return r.addDecision(d, drops, errs, seen, envs, dist, envOf)
	}); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	r.Proofs = pt.finish()
	r.Drops, r.Errors = sortCounts(drops), sortCounts(errs)
	for _, e := range envs {
		r.Environments = append(r.Environments, *e)
	}
	sort.Slice(r.Environments, func(i, j int) bool {
		a, b := r.Environments[i], r.Environments[j]
		if a.Tasks != b.Tasks {
			return a.Tasks > b.Tasks
		}
		return a.Hash < b.Hash
	})
	for _, n := range []string{"build", "start", "teardown", "verifier (median test.sh per task)", "sandbox time per task and stage"} {
		v := dist[n]
		sort.Float64s(v)
		if len(v) > 0 {
			r.Durations = append(r.Durations, Distribution{Name: n, Values: v})
		}
	}
	return nil
}

// mayCount is false for the lines addDecision would ignore: keeps with no
// evidence and no proof outside the env stage, which are most lines of a large run.
// The test is on the raw line and errs towards true: encoding/json writes
// no spaces and escapes every quote inside strings, so the quoted key
// sequences below appear only as the decision's own fields.
func mayCount(line []byte) bool {
	return !bytes.Contains(line, []byte(`"verdict":"keep"`)) ||
		bytes.Contains(line, []byte(`"evidence":`)) ||
		bytes.Contains(line, []byte(`"proof":`)) ||
		bytes.Contains(line, []byte(`"stage":"env"`))
}

func (r *BuildReport) addDecision(d pipeline.Decision, drops, errs map[[2]string]int64, seen map[[2]string]bool,
	envs map[string]*EnvStat, dist map[string][]float64, envOf func(int64) (string, error)) error {
	key := [2]string{d.Stage, d.Reason}
	switch d.Verdict {
	case pipeline.Drop:
		drops[key]++
	case pipeline.Error:
		errs[key]++
	}
	if d.Verdict != pipeline.Keep && !seen[key] {
		seen[key] = true
		r.Examples = append(r.Examples, d)
	}
	ev := d.Evidence
	if ev != nil && ev.SandboxSeconds > 0 {
		dist["sandbox time per task and stage"] = append(dist["sandbox time per task and stage"], ev.SandboxSeconds)
	}
	switch d.Stage {
	case filters.StageEnv:
		r.EnvTasks++
		h, err := envOf(d.Index)
		if err != nil {
			return err
		}
		if h == "" {
			h = "(unknown)"
		}
		e := envs[h]
		if e == nil {
			e = &EnvStat{Hash: h, Verdict: string(d.Verdict), Reason: d.Reason, ExamplePath: d.Path}
			envs[h] = e
		}
		e.Tasks++
		if ev != nil && (ev.BuildSeconds > 0 || ev.StartSeconds > 0) && !e.Measured {
			e.Measured, e.Build, e.Start, e.Teardown = true, ev.BuildSeconds, ev.StartSeconds, ev.Teardown
			e.Verdict, e.Reason = string(d.Verdict), d.Reason
			dist["build"] = append(dist["build"], ev.BuildSeconds)
			if ev.StartSeconds > 0 {
				dist["start"] = append(dist["start"], ev.StartSeconds)
				dist["teardown"] = append(dist["teardown"], ev.Teardown)
			}
		}
	case filters.StageFlaky:
		if ev != nil && ev.VerifierSeconds > 0 {
			dist["verifier (median test.sh per task)"] = append(dist["verifier (median test.sh per task)"], ev.VerifierSeconds)
		}
	}
	return nil
}

func sortCounts(m map[[2]string]int64) []ReasonCount {
	out := make([]ReasonCount, 0, len(m))
	for k, n := range m {
		out = append(out, ReasonCount{Stage: k[0], Reason: k[1], Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Stage != out[j].Stage {
			return out[i].Stage < out[j].Stage
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// WriteBuildReport renders RUN_DIR/report.html for a build or filter run.
func WriteBuildReport(runDir string) error {
	r, err := LoadBuildReport(runDir)
	if err != nil {
		return err
	}
	return r.write()
}

func (r *BuildReport) write() error {
	runDir := r.Dir
	var b bytes.Buffer
	if err := r.Render(&b); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(runDir, ReportFile), b.Bytes())
}

// Render writes the report as one self-contained HTML page (inline CSS and
// SVG, no scripts, no external resources).
func (r *BuildReport) Render(w io.Writer) error {
	return buildTmpl.Execute(w, map[string]any{
		"R":         r,
		"Funnel":    funnelSVG(r.Summary.Funnel),
		"Drops":     reasonBarsSVG(r.Drops),
		"Durations": r.durationCharts(),
		"EnvShown":  r.Environments[:min(len(r.Environments), 50)],
	})
}

type durationChart struct {
	Name                string
	N                   int
	P50, P90, Max, Mean float64
	SVG                 template.HTML
}

func (r *BuildReport) durationCharts() []durationChart {
	var out []durationChart
	for _, d := range r.Durations {
		var sum float64
		for _, v := range d.Values {
			sum += v
		}
		out = append(out, durationChart{Name: d.Name, N: len(d.Values), P50: d.Quantile(0.5), P90: d.Quantile(0.9),
			Max: d.Values[len(d.Values)-1], Mean: sum / float64(len(d.Values)), SVG: histogramSVG(d.Values)})
	}
	return out
}

// funnelSVG draws, per stage, the tasks in (grey) and kept (green).
func funnelSVG(funnel []*pipeline.StageSummary) template.HTML {
	const w, row, label = 820.0, 26.0, 120.0
	var top int64 = 1
	for _, st := range funnel {
		top = max(top, st.In)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-size="12">`, w, row*float64(len(funnel))+8)
	scale := (w - label - 150) / float64(top)
	for i, st := range funnel {
		y := float64(i)*row + 4
		fmt.Fprintf(&b, `<text x="0" y="%g">%s</text>`, y+15, template.HTMLEscapeString(st.Stage))
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%.1f" height="18" fill="#ddd"/>`, label, y, float64(st.In)*scale)
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%.1f" height="18" fill="#2ca02c"/>`, label, y, float64(st.Kept)*scale)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g">%d in → %d kept, %d dropped, %d errors</text>`,
			label+float64(st.In)*scale+6, y+14, st.In, st.Kept, st.Dropped, st.Errors)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// reasonBarsSVG draws one bar per (stage, reason) drop count.
func reasonBarsSVG(rc []ReasonCount) template.HTML {
	if len(rc) == 0 {
		return ""
	}
	const w, row, label = 820.0, 20.0, 320.0
	top := rc[0].Count
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-size="12">`, w, row*float64(len(rc))+4)
	scale := (w - label - 60) / float64(max(top, 1))
	for i, c := range rc {
		y := float64(i)*row + 2
		fmt.Fprintf(&b, `<text x="0" y="%g">%s</text>`, y+13, template.HTMLEscapeString(c.Stage+" / "+c.Reason))
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%.1f" height="15" fill="#d62728"/>`, label, y, float64(c.Count)*scale)
		fmt.Fprintf(&b, `<text x="%.1f" y="%g">%d</text>`, label+float64(c.Count)*scale+5, y+12, c.Count)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// histogramSVG draws sorted values in 20 equal-width bins from 0 to max.
func histogramSVG(sorted []float64) template.HTML {
	const w, h, pad, bins = 820.0, 160.0, 30.0, 20
	hi := sorted[len(sorted)-1]
	if hi <= 0 {
		hi = 1
	}
	counts := make([]int, bins)
	for _, v := range sorted {
		counts[min(bins-1, int(v/hi*bins))]++
	}
	top := 1
	for _, c := range counts {
		top = max(top, c)
	}
	bw := (w - 2*pad) / bins
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-size="11">`, w, h+20)
	for i, c := range counts {
		bh := float64(c) / float64(top) * (h - pad)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#1f77b4"><title>%.2f–%.2f s: %d</title></rect>`,
			pad+float64(i)*bw+1, h-bh, bw-2, bh, float64(i)*hi/bins, float64(i+1)*hi/bins, c)
		if c > 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%d</text>`, pad+float64(i)*bw+2, h-bh-3, c)
		}
	}
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#000"/>`, pad, h, w-pad, h)
	fmt.Fprintf(&b, `<text x="%g" y="%g">0 s</text><text x="%g" y="%g">%.2f s</text>`, pad, h+14, w-pad-50, h+14, hi)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

var buildTmpl = template.Must(template.New("build").Funcs(template.FuncMap{
	"short": func(s string) string { return truncate(s, 12) },
	"pct": func(a, b int64) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>otcurate build — {{.R.Dir}}</title>
<style>body{font-family:sans-serif;max-width:980px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:13px}
td.n{text-align:right}pre{background:#f6f6f6;padding:.6em;white-space:pre-wrap;font-size:12px;max-height:16em;overflow:auto}
.warn{color:#b00}</style></head><body>
<h1>otcurate build</h1>
{{with .R.Summary}}<p>Pool <code>{{.Pool}}</code> · run directory <code>{{$.R.Dir}}</code> · {{.StartedAt.Format "2006-01-02 15:04:05"}} UTC ·
{{printf "%.1f" .WallSeconds}} s wall{{if .Interrupted}} · <b class="warn">INTERRUPTED: re-run the same command to resume</b>{{end}}</p>
<p><b>{{.TasksIn}}</b> tasks in, <b>{{.TasksKept}}</b> kept ({{pct .TasksKept .TasksIn}}){{if $.R.Proofs}}{{if not .Interrupted}}, <b{{if $.R.UnprovenKept}} class="warn"{{end}}>{{$.R.UnprovenKept}} of them with an unproven verifier</b> (see Verifier proof){{end}}{{end}}, {{.Errors}} undecided (infrastructure).
Stages: {{range $i, $s := .Stages}}{{if $i}} → {{end}}{{$s}}{{end}}.{{end}}
Sandboxes: {{.R.Runs}} verifier runs and {{printf "%.0f" .R.SandboxSeconds}} sandbox-seconds this run; {{.R.Reused}} verdicts reused from the ledger ({{.R.Summary.LedgerHits}} ledger hits).</p>
{{range .R.Summary.Output}}<p>Output: <code>{{.}}</code></p>{{end}}

{{if .R.Proofs}}<h2>Verifier proof</h2>
{{with .R.Summary}}{{if .Interrupted}}<p class="warn">The run was interrupted: no output was written; the counts below are the gate's decisions so far.</p>
{{else}}<p>Of the <b>{{.TasksKept}}</b> kept tasks, <b{{if $.R.UnprovenKept}} class="warn"{{end}}>{{$.R.UnprovenKept}} ({{pct $.R.UnprovenKept .TasksKept}}) have an unproven verifier</b>:
the flaky stage kept them as <code>verifier_unproven</code> (proof <code>none</code>) because nothing showed that a correct solution scores 1.
<code>--require-proof</code> drops such tasks; <code>--policy</code> (or <code>--solutions</code>) gives them a chance of a proof.</p>{{end}}{{end}}
{{if .R.ProofMismatch}}<p class="warn">Inconsistent run directory: {{.R.ProofMismatch}}.</p>{{end}}
<table><tr><th>proof</th><th>in output</th><th>kept by flaky</th><th>dropped by flaky</th><th>runs</th><th>sandbox s</th><th>from ledger</th><th>what it means</th></tr>
{{range .R.Proofs}}<tr><td><code>{{.Proof}}</code></td><td class="n">{{.InOutput}}</td><td class="n">{{.Kept}}</td><td class="n">{{.Dropped}}</td><td class="n">{{.Runs}}</td><td class="n">{{printf "%.0f" .SandboxSeconds}}</td><td class="n">{{.FromLedger}}</td><td>{{.Meaning}}</td></tr>
{{end}}</table>
<p style="font-size:12px">Counted from decisions.jsonl: the flaky stage's lines by their <code>proof</code>; "in output" are those tasks no decision of any stage dropped; runs and sandbox-seconds are what the gate spent on them in this run (the negative side included), decisions served from the ledger cost nothing now; undecided (error) decisions carry no proof and their spend is not in these rows.</p>

{{end}}<h2>Funnel</h2>{{.Funnel}}
<table><tr><th>stage</th><th>in</th><th>kept</th><th>dropped</th><th>errors</th><th>runs</th><th>sandbox s</th><th>from ledger</th><th>wall s</th></tr>
{{range .R.Summary.Funnel}}<tr><td>{{.Stage}}</td><td class="n">{{.In}}</td><td class="n">{{.Kept}}</td><td class="n">{{.Dropped}}</td><td class="n">{{.Errors}}</td>
<td class="n">{{.Runs}}</td><td class="n">{{printf "%.0f" .SandboxSeconds}}</td><td class="n">{{.FromLedger}}</td><td class="n">{{printf "%.1f" .Seconds}}</td></tr>
{{end}}</table>

<h2>Drops by reason</h2>
{{if .R.Drops}}{{.Drops}}
<table><tr><th>stage</th><th>reason</th><th>tasks</th><th>share of input</th></tr>
{{range .R.Drops}}<tr><td>{{.Stage}}</td><td><code>{{.Reason}}</code></td><td class="n">{{.Count}}</td><td class="n">{{pct .Count $.R.Summary.TasksIn}}</td></tr>{{end}}</table>
{{else}}<p>No task was dropped.</p>{{end}}
{{if .R.Errors}}<h3>Undecided (infrastructure, not task defects; re-run to retry)</h3>
<table><tr><th>stage</th><th>reason</th><th>tasks</th></tr>
{{range .R.Errors}}<tr><td>{{.Stage}}</td><td><code>{{.Reason}}</code></td><td class="n">{{.Count}}</td></tr>{{end}}</table>{{end}}

<h2>Durations</h2>
{{range .Durations}}<h3>{{.Name}}</h3><p>{{.N}} values · median {{printf "%.2f" .P50}} s · p90 {{printf "%.2f" .P90}} s · max {{printf "%.2f" .Max}} s · mean {{printf "%.2f" .Mean}} s</p>{{.SVG}}
{{else}}<p>No sandbox stage ran.</p>{{end}}

{{if .R.EnvTasks}}<h2>Environments</h2>
<p><b>{{len .R.Environments}}</b> unique environments among {{.R.EnvTasks}} tasks that reached the env stage (the reference team kept at most 6 per dataset).</p>
<table><tr><th>environment hash</th><th>tasks</th><th>verdict</th><th>build s</th><th>start s</th><th>teardown s</th><th>first task</th></tr>
{{range .EnvShown}}<tr><td><code>{{short .Hash}}</code></td><td class="n">{{.Tasks}}</td><td>{{.Verdict}} <code>{{.Reason}}</code></td>
{{if .Measured}}<td class="n">{{printf "%.2f" .Build}}</td><td class="n">{{printf "%.2f" .Start}}</td><td class="n">{{printf "%.2f" .Teardown}}</td>{{else}}<td colspan="3">not measured in this run's decisions</td>{{end}}<td>{{.ExamplePath}}</td></tr>
{{end}}</table>{{if gt (len .R.Environments) 50}}<p>(the 50 most used of {{len .R.Environments}} shown)</p>{{end}}{{end}}

<h2>One example per reason</h2>
{{range .R.Examples}}<h3>{{.Stage}} / <code>{{.Reason}}</code> ({{.Verdict}})</h3>
<p><code>{{.Path}}</code>: {{.Detail}}{{with .Evidence}} — {{.Runs}} runs, {{.Passes}} passed, {{.Sandboxes}} sandboxes, {{printf "%.1f" .SandboxSeconds}} sandbox-seconds{{end}}</p>
{{with .Evidence}}{{if .Log}}<pre>{{.Log}}</pre>{{end}}{{end}}
{{else}}<p>No task was dropped.</p>{{end}}
<p style="color:#777;font-size:12px">Generated by <code>otcurate report {{.R.Dir}}</code> from summary.json, decisions.jsonl and tasks.parquet.</p>
</body></html>
`))
