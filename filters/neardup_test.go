package filters_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/similarity"
)

// A task and the variants the similarity stages must tell apart.
const (
	logInstr = `# Summarise the web server log

The file /app/data/access.log holds 1500 lines of an nginx access log in the combined format.
Write a Python script /app/summary.py that reads it and writes /app/out/report.json with
three keys: "top_paths", the 10 most requested paths with their counts, most requested first;
"status_counts", a map from each HTTP status code to the number of requests that got it; and
"bytes_total", the sum of the response sizes in bytes, counting "-" as 0. Requests whose
status is 404 are counted in status_counts but not in top_paths. The script must finish
within 30 seconds and must not use any package outside the standard library.
`
	// The same task, re-wrapped, with other numbers.
	logInstrEdited = `# Summarise the web server log

The file /app/data/access.log holds 2400 lines of an nginx access log in the
combined format. Write a Python script /app/summary.py that reads it and writes
/app/out/report.json with three keys: "top_paths", the 5 most requested paths
with their counts, most requested first; "status_counts", a map from each HTTP
status code to the number of requests that got it; and "bytes_total", the sum of
the response sizes in bytes, counting "-" as 0. Requests whose status is 404 are
counted in status_counts but not in top_paths. The script must finish within 60
seconds and must not use any package outside the standard library.
`
	// A harder task of the same family: same topic, another instruction.
	logInstrHard = `# Sessionise the web server log

Read the nginx access log at /app/data/access.log (combined format) and group requests into
sessions: a session is a run of requests from one client IP with no gap longer than 30 minutes.
Write /app/sessions.py producing /app/out/sessions.csv with one row per session: ip, start time
in ISO 8601, duration in seconds and the number of distinct paths visited, sorted by start time
then ip. Malformed lines are skipped and counted; print that count on stderr when done.
`
	logTestSh = `#!/bin/bash
cd /app
if python3 -m pytest -q /tests/test_outputs.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`
	logTests = `import json
import subprocess

def load_report():
    subprocess.run(["python3", "/app/summary.py"], check=True, timeout=30)
    with open("/app/out/report.json") as fh:
        return json.load(fh)

def test_top_paths():
    report = load_report()
    assert report["top_paths"][0] == ["/index.html", 412]
    assert len(report["top_paths"]) == 10

def test_status_counts():
    report = load_report()
    assert report["status_counts"]["200"] == 1203
    assert report["status_counts"]["404"] == 97

def test_bytes_total():
    report = load_report()
    assert report["bytes_total"] == 18734112
`
	// The same tests with a renamed variable and other numbers.
	logTestsEdited = `import json
import subprocess

def load_report():
    subprocess.run(["python3", "/app/summary.py"], check=True, timeout=60)
    with open("/app/out/report.json") as f:
        return json.load(f)

def test_top_paths():
    summary = load_report()
    assert summary["top_paths"][0] == ["/index.html", 977]
    assert len(summary["top_paths"]) == 5

def test_status_counts():
    summary = load_report()
    assert summary["status_counts"]["200"] == 2003
    assert summary["status_counts"]["404"] == 151

def test_bytes_total():
    summary = load_report()
    assert summary["bytes_total"] == 30112876
`
	logTestsHard = `import csv
import subprocess

def rows():
    subprocess.run(["python3", "/app/sessions.py"], check=True, timeout=30)
    with open("/app/out/sessions.csv") as fh:
        return list(csv.reader(fh))

def test_session_count():
    assert len(rows()) == 211

def test_sorted():
    r = rows()
    assert r == sorted(r, key=lambda x: (x[1], x[0]))

def test_first_session():
    assert rows()[0] == ["10.0.0.7", "2024-03-01T00:00:04", "1799", "12"]
`
)

func logTask(instr, tests string) map[string]string {
	return map[string]string{
		"instruction.md":         instr,
		"task.toml":              "schema_version = \"1.1\"\n",
		"environment/Dockerfile": "FROM python:3.11-slim\nRUN pip install pytest\nWORKDIR /app\n",
		"tests/test.sh":          logTestSh,
		"tests/test_outputs.py":  tests,
	}
}

func writeTaskDirs(t *testing.T, tasks map[string]map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, files := range tasks {
		writeTaskDir(t, filepath.Join(root, name), files)
	}
	return root
}

// writeTaskDir writes one task directory.
func writeTaskDir(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// runStages runs stages over a folder of task directories and returns each
// task's last decision by path.
func runStages(t *testing.T, root string, names []string, opts filters.Options) map[string]pipeline.Decision {
	t.Helper()
	src, err := pool.OpenTaskDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := filters.Build(names, opts)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]pipeline.Decision{}
	_, _, err = pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, Workers: 2,
		OnDecision: func(d pipeline.Decision) { last[d.Path] = d }})
	if err != nil {
		t.Fatal(err)
	}
	return last
}

func TestNearDup(t *testing.T) {
	root := writeTaskDirs(t, map[string]map[string]string{
		"a-log-summary":        logTask(logInstr, logTests),
		"b-log-summary-edited": logTask(logInstrEdited, logTestsEdited),
		"c-log-sessions-hard":  logTask(logInstrHard, logTestsHard),
		// The same instruction over other tests, and other instructions
		// over the same tests: neither is a copy.
		"d-same-instruction-other-tests": logTask(logInstr, logTestsHard),
		"e-other-instruction-same-tests": logTask(logInstrHard, logTests),
	})
	got := runStages(t, root, []string{"validate", "dedup", "near_dup"}, filters.Options{})
	for path, want := range map[string]string{
		"a-log-summary":                  "keep distinct",
		"b-log-summary-edited":           "drop near_duplicate",
		"c-log-sessions-hard":            "keep distinct",
		"d-same-instruction-other-tests": "keep distinct",
		"e-other-instruction-same-tests": "keep distinct",
	} {
		d := got[path]
		if g := string(d.Verdict) + " " + d.Reason; d.Stage != filters.StageNearDup || g != want {
			t.Errorf("%s: %s %s (%s), want near_dup %s", path, d.Stage, g, d.Detail, want)
		}
	}
	if d := got["b-log-summary-edited"]; !strings.Contains(d.Detail, "near-duplicate of a-log-summary: Jaccard ") {
		t.Errorf("the drop does not name the task it matches: %s", d.Detail)
	}

	// Keep the first in pool order: with the copy first, the original goes.
	root = writeTaskDirs(t, map[string]map[string]string{
		"a-edited": logTask(logInstrEdited, logTestsEdited),
		"b-orig":   logTask(logInstr, logTests),
	})
	got = runStages(t, root, []string{"validate", "near_dup"}, filters.Options{})
	if d := got["b-orig"]; d.Reason != filters.ReasonNearDuplicate || !strings.Contains(d.Detail, "of a-edited") {
		t.Errorf("pool order: b-orig %s %s", d.Reason, d.Detail)
	}
	if d := got["a-edited"]; d.Verdict != pipeline.Keep {
		t.Errorf("pool order: a-edited %s %s", d.Reason, d.Detail)
	}

	// A threshold above the pair's similarity keeps both.
	got = runStages(t, root, []string{"validate", "near_dup"}, filters.Options{NearDupThreshold: 0.99})
	if d := got["b-orig"]; d.Verdict != pipeline.Keep {
		t.Errorf("threshold 0.99: b-orig %s %s", d.Reason, d.Detail)
	}
	if _, err := filters.NewNearDup(1.5); err == nil {
		t.Error("threshold 1.5 accepted")
	}
}

func TestDecontam(t *testing.T) {
	bench := writeTaskDirs(t, map[string]map[string]string{
		"bench/log-summary": logTask(logInstr, logTests),
	})
	// A fuzzy copy: every seventh word changed, so no 8-gram survives.
	words := similarity.Words([]byte(logInstr))
	for i := 6; i < len(words); i += 7 {
		words[i] = "zz" + words[i]
	}
	fuzzy := strings.Join(words, " ")
	root := writeTaskDirs(t, map[string]map[string]string{
		"a-edited-copy": logTask(logInstrEdited, logTestsEdited),
		"b-fuzzy-copy":  logTask(fuzzy, logTestsHard),
		"c-same-family": logTask(logInstrHard, logTestsHard),
	})
	opts := filters.Options{Decontam: filters.DecontamOptions{Against: []string{bench}}}
	got := runStages(t, root, []string{"validate", "decontam"}, opts)
	if d := got["a-edited-copy"]; d.Reason != filters.ReasonContaminated ||
		!strings.Contains(d.Detail, "8-gram overlap with benchmark task "+bench+":bench/log-summary") ||
		!strings.Contains(d.Detail, `: "summarise the web server log the file app data access log holds 0 lines of an nginx`) {
		t.Errorf("edited copy: %s %s %s", d.Stage, d.Reason, d.Detail)
	}
	if d := got["b-fuzzy-copy"]; d.Reason != filters.ReasonContaminated || !strings.Contains(d.Detail, "fuzzy match of benchmark task") {
		t.Errorf("fuzzy copy: %s %s %s", d.Stage, d.Reason, d.Detail)
	}
	if d := got["c-same-family"]; d.Verdict != pipeline.Keep || d.Reason != filters.ReasonClean {
		t.Errorf("same family, other instruction: %s %s %s", d.Stage, d.Reason, d.Detail)
	}

	// A benchmark whose tasks share a prompt template: a task of the same
	// template and other content is clean; a copy of one task is not.
	preamble := "You are working in a repository checked out at /testbed. Consider the following issue description and fix it:\n"
	tpl := map[string]map[string]string{}
	for i := 0; i < 8; i++ {
		tpl[fmt.Sprintf("bench/t%d", i)] = logTask(preamble+strings.Repeat(fmt.Sprintf("issue%c detail%c ", 'a'+i, 'a'+i), 40), logTests)
	}
	tplBench := writeTaskDirs(t, tpl)
	root = writeTaskDirs(t, map[string]map[string]string{
		"a-same-template": logTask(preamble+"The parser drops the last line of a file that lacks a trailing newline.", logTests),
		"b-copy-of-t3":    logTask(preamble+strings.Repeat("issued detaild ", 40), logTests),
	})
	got = runStages(t, root, []string{"validate", "decontam"}, filters.Options{Decontam: filters.DecontamOptions{Against: []string{tplBench}}})
	if d := got["a-same-template"]; d.Verdict != pipeline.Keep {
		t.Errorf("benchmark boilerplate counted as contamination: %s %s", d.Reason, d.Detail)
	}
	if d := got["b-copy-of-t3"]; d.Reason != filters.ReasonContaminated || !strings.Contains(d.Detail, "bench/t3") {
		t.Errorf("copy of a templated benchmark task: %s %s", d.Reason, d.Detail)
	}

	for _, c := range []struct {
		name    string
		against []string
		want    string
	}{
		{"none", nil, "needs at least one benchmark pool"},
		{"missing", []string{filepath.Join(bench, "nope.parquet")}, "decontam: benchmark "},
		{"empty folder", []string{t.TempDir()}, "decontam: benchmark "},
	} {
		_, err := filters.NewDecontam(filters.DecontamOptions{Against: c.against})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestNearDupOnSamplePool: of the generated sample pool, near_dup drops
// exactly one task, a second copy of the run_length_decode/v2 kata whose
// instruction differs only in its example (0.85) and whose tests check
// other cases of the same function (0.53 without the 14 harness shingles
// more than 48 of the pool's 60 tasks share; 0.57 with them).
func TestNearDupOnSamplePool(t *testing.T) {
	src, err := pool.Open("../testdata/sample-pool.parquet")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := filters.Build([]string{"validate", "dedup", "near_dup"}, filters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var drops []string
	_, _, err = pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, Workers: 2,
		OnDecision: func(d pipeline.Decision) {
			if d.Stage == filters.StageNearDup && d.Verdict != pipeline.Keep {
				drops = append(drops, d.Path+": "+d.Detail)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(drops) != 1 || !strings.HasPrefix(drops[0], "task-00036: near-duplicate of task-00016: Jaccard 0.85 on the instruction, 0.53 on the tests") {
		t.Errorf("near_dup drops %q", drops)
	}
}

// TestDecontamUnobserved: decontam judges tasks during validate's pass
// (ObserveContent); a task it was not shown there (a stage list that hands
// it no content) is judged in Process, with the same verdicts.
func TestDecontamUnobserved(t *testing.T) {
	bench := writeTaskDirs(t, map[string]map[string]string{
		"bench/log-summary": logTask(logInstr, logTests),
	})
	d, err := filters.NewDecontam(filters.DecontamOptions{Against: []string{bench}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		files  map[string]string
		reason string
	}{
		{"edited-copy", logTask(logInstrEdited, logTestsEdited), filters.ReasonContaminated},
		{"same-family", logTask(logInstrHard, logTestsHard), filters.ReasonClean},
	} {
		dir := filepath.Join(t.TempDir(), c.name)
		writeTaskDir(t, dir, c.files)
		var buf bytes.Buffer
		if err := bundle.EncodeDir(&buf, dir); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Scan(buf.Bytes(), bundle.DefaultLimits(), bundle.DefaultRetain())
		if err != nil {
			t.Fatal(err)
		}
		out := d.Process(context.Background(), &pipeline.Item{Task: &pipeline.Task{Path: c.name}, Bundle: b})
		if out.Reason != c.reason {
			t.Errorf("%s: %s %s %s, want %s", c.name, out.Verdict, out.Reason, out.Detail, c.reason)
		}
	}
}
