package reports

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// series is one curve of the training report.
type series struct {
	Name   string
	Color  string
	Points [][2]float64 // (step, value)
}

// WriteTrainReport renders RUN_DIR/report.html from metrics.jsonl and
// eval.jsonl: reward, pass rates and the share of zero-variance groups
// per step, the held-out greedy pass rate, and the last step's numbers.
// Every point is a line of those files.
func WriteTrainReport(runDir string) error {
	metrics, err := readJSONL(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		return err
	}
	evals, err := readJSONL(filepath.Join(runDir, "eval.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	curve := func(rows []map[string]any, key, name, color string) series {
		s := series{Name: name, Color: color}
		for _, r := range rows {
			step, _ := r["step"].(float64)
			if v, ok := r[key].(float64); ok {
				s.Points = append(s.Points, [2]float64{step, v})
			}
		}
		return s
	}
	charts := []struct {
		Title string
		SVG   template.HTML
	}{
		{"Rollouts per step", svgChart([]series{
			curve(metrics, "mean_reward", "mean reward", "#1f77b4"),
			curve(metrics, "pass_at_k", "pass@k (task solved at least once)", "#2ca02c"),
			curve(metrics, "zero_variance_share", "zero-variance groups", "#d62728"),
			curve(metrics, "infra_failure_rate", "infrastructure failures", "#7f7f7f"),
		})},
		{"Tampered attempts per step (changes to the verifier's trust base, not carried: the reward-hacking signal)", svgChart([]series{curve(metrics, "tampered", "tampered attempts", "#e377c2")})},
		{"Held-out greedy pass rate", svgChart([]series{curve(evals, "pass_rate", "held-out pass rate (T=0)", "#9467bd")})},
		{"Trainer overhead share of a step", svgChart([]series{curve(metrics, "overhead_share", "(step − rollout phase) / step", "#8c564b")})},
	}
	var last map[string]any
	if len(metrics) > 0 {
		last = metrics[len(metrics)-1]
	}
	var lastRows []string
	for _, k := range sortedKeys(last) {
		v := last[k]
		if gs, ok := v.([]any); ok && k == "groups" { // "task passed/scored", one per group
			var parts []string
			for _, g := range gs {
				if m, ok := g.(map[string]any); ok {
					parts = append(parts, fmt.Sprintf("%v %v/%v", m["task"], m["passed"], m["scored"]))
				}
			}
			v = strings.Join(parts, ", ")
		}
		lastRows = append(lastRows, fmt.Sprintf("%s\t%v", k, v))
	}
	f, err := os.Create(filepath.Join(runDir, "report.html.tmp"))
	if err != nil {
		return err
	}
	err = trainTmpl.Execute(f, map[string]any{"Dir": runDir, "Charts": charts, "Steps": len(metrics), "Last": lastRows, "Evals": evals})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(filepath.Join(runDir, "report.html.tmp"), filepath.Join(runDir, "report.html"))
}

var trainTmpl = template.Must(template.New("train").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>otcurate train — {{.Dir}}</title>
<style>body{font-family:sans-serif;max-width:900px;margin:2em auto}pre{background:#f6f6f6;padding:1em}</style></head>
<body><h1>Training run {{.Dir}}</h1><p>{{.Steps}} steps (metrics.jsonl); held-out evaluations in eval.jsonl.</p>
{{range .Charts}}<h2>{{.Title}}</h2>{{.SVG}}{{end}}
<h2>Held-out evaluations</h2><pre>{{range .Evals}}step {{index . "step"}}: pass rate {{index . "pass_rate"}} ({{index . "passed"}} of {{index . "scored"}} scored)
{{end}}</pre>
<h2>Last step</h2><pre>{{range .Last}}{{.}}
{{end}}</pre></body></html>
`))

// svgChart draws series over steps, y in [0, max(1, data)].
func svgChart(ss []series) template.HTML {
	const w, h, pad = 800.0, 260.0, 40.0
	maxX, maxY := 1.0, 1.0
	for _, s := range ss {
		for _, p := range s.Points {
			maxX, maxY = math.Max(maxX, p[0]), math.Max(maxY, p[1])
		}
	}
	x := func(v float64) float64 { return pad + v/maxX*(w-2*pad) }
	y := func(v float64) float64 { return h - pad - v/maxY*(h-2*pad) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-size="11">`, w, h+20*float64(len(ss)))
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#000"/><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#000"/>`,
		pad, h-pad, w-pad, h-pad, pad, pad, pad, h-pad)
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		fmt.Fprintf(&b, `<text x="2" y="%g">%.2g</text><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#eee"/>`, y(t*maxY)+4, t*maxY, pad, y(t*maxY), w-pad, y(t*maxY))
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g">step %g</text>`, w-pad-40, h-pad+15, maxX)
	for i, s := range ss {
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p[0]), y(p[1])))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, x(p[0]), y(p[1]), s.Color)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, s.Color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="12" height="4" fill="%s"/><text x="%g" y="%g">%s</text>`,
			pad, h+float64(i)*20, s.Color, pad+18, h+float64(i)*20+6, template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func readJSONL(name string) ([]map[string]any, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
