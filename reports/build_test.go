package reports

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/rundir"
)

var update = flag.Bool("update", false, "rewrite golden files")

// buildRunDir copies testdata/buildrun (summary.json, decisions.jsonl) to a
// temporary run directory and writes its manifest: tasks 0, 3 and 4 share
// environment aaa…, task 2 has bbb…, task 5 ccc…, task 1 never decoded.
func buildRunDir(t *testing.T) string {
	t.Helper()
	dir := runFixture(t, "buildrun")
	env := []string{"aaaaaaaaaaaaaaaa", "", "bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaa", "cccccccccccccccc"}
	var tasks []*pipeline.Task
	for i, h := range env {
		tasks = append(tasks, &pipeline.Task{Index: int64(i), Path: "t", EnvHash: h})
	}
	if err := rundir.WriteManifest(filepath.Join(dir, rundir.ManifestFile), tasks, []string{"validate"}, filters.Layout()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestBuildReportNumbers checks the figures the report computes from a
// run directory: counts by reason, one example per non-keep reason,
// unique environments with their measurements, duration distributions.
func TestBuildReportNumbers(t *testing.T) {
	r, err := LoadBuildReport(buildRunDir(t))
	if err != nil {
		t.Fatal(err)
	}
	wantDrops := []ReasonCount{{"env", "build_failed", 1}, {"flaky", "flaky_verifier", 1}, {"flaky", "nop_passes", 1}, {"validate", "not_gzip", 1}}
	if len(r.Drops) != len(wantDrops) {
		t.Fatalf("drops %+v, want %+v", r.Drops, wantDrops)
	}
	for i, w := range wantDrops {
		if r.Drops[i] != w {
			t.Errorf("drop %d: %+v, want %+v", i, r.Drops[i], w)
		}
	}
	if len(r.Errors) != 1 || r.Errors[0].Reason != "engine_unavailable" {
		t.Errorf("errors %+v", r.Errors)
	}
	if len(r.Examples) != 5 {
		t.Errorf("%d examples, want one per non-keep reason (5)", len(r.Examples))
	}
	if r.EnvTasks != 5 || len(r.Environments) != 3 {
		t.Fatalf("env tasks %d, environments %+v", r.EnvTasks, r.Environments)
	}
	if e := r.Environments[0]; e.Hash != "aaaaaaaaaaaaaaaa" || e.Tasks != 3 || !e.Measured || e.Build != 2 || e.Start != 1 || e.Teardown != 0.5 {
		t.Errorf("most used environment %+v", e)
	}
	if r.Runs != 9 || r.SandboxSeconds != 40.5 || r.Reused != 1 {
		t.Errorf("runs %d, sandbox seconds %g, reused %d", r.Runs, r.SandboxSeconds, r.Reused)
	}
	dist := map[string]Distribution{}
	for _, d := range r.Durations {
		dist[d.Name] = d
	}
	if b := dist["build"]; len(b.Values) != 3 || b.Quantile(0.5) != 2 || b.Quantile(1) != 6 {
		t.Errorf("build durations %+v", b)
	}
	if v := dist["verifier (median test.sh per task)"]; len(v.Values) != 3 || v.Quantile(0.5) != 0.4 {
		t.Errorf("verifier durations %+v", v)
	}
}

// TestBuildReportGolden renders the report and compares it with
// testdata/buildrun.report.html (go test -run Golden -update rewrites it).
func TestBuildReportGolden(t *testing.T) {
	dir := buildRunDir(t)
	r, err := LoadBuildReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Dir = "RUN_DIR" // the temporary directory's name must not reach the golden file
	var b bytes.Buffer
	if err := r.Render(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "buildrun.report.html")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("report differs from %s (run with -update after checking the change)", golden)
	}
	for _, bad := range []string{"<script", "http://", "https://", "src="} {
		if strings.Contains(strings.ReplaceAll(b.String(), `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("report is not self-contained: contains %q", bad)
		}
	}
	if err := WriteBuildReport(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ReportFile)); err != nil {
		t.Error(err)
	}
}

// TestStartBuildReportMatchesWriteBuildReport: the report a build starts
// reading before its manifest exists, with environment hashes from memory,
// is byte for byte the one written from the finished run directory.
func TestStartBuildReportMatchesWriteBuildReport(t *testing.T) {
	dir := buildRunDir(t)
	if err := WriteBuildReport(dir); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, rundir.ManifestFile)
	saved, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	// As during a build: no manifest yet, hashes from the tasks in memory.
	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, ReportFile))
	env := map[int64]string{0: "aaaaaaaaaaaaaaaa", 2: "bbbbbbbbbbbbbbbb", 3: "aaaaaaaaaaaaaaaa", 4: "aaaaaaaaaaaaaaaa", 5: "cccccccccccccccc"}
	lookups := 0
	p := StartBuildReport(dir, func(i int64) (string, error) { lookups++; return env[i], nil })
	if err := os.WriteFile(manifest, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if lookups == 0 {
		t.Error("the environment lookup was never used: the test does not cover the env stage")
	}
	if !bytes.Equal(got, want) {
		t.Errorf("report from StartBuildReport differs from WriteBuildReport's (%d vs %d bytes)", len(got), len(want))
	}
}

// TestMayCount checks the raw-line test that spares parsing skips only
// keeps without evidence outside the env stage, whatever the strings hold.
func TestMayCount(t *testing.T) {
	for _, d := range []pipeline.Decision{
		{Path: "a", Stage: "validate", Verdict: pipeline.Keep, Reason: "valid"},
		{Path: `x","verdict":"drop`, Stage: "dedup", Verdict: pipeline.Keep, Reason: "unique"},
		{Path: "a", Stage: "validate", Verdict: pipeline.Drop, Reason: "not_gzip", Detail: `"verdict":"keep"`},
		{Path: `"stage":"env"`, Stage: "lint", Verdict: pipeline.Error, Reason: "x"},
		{Path: "a", Stage: "env", Verdict: pipeline.Keep, Reason: "stable"},
		{Path: "a", Stage: "flaky", Verdict: pipeline.Keep, Reason: "stable", Evidence: &pipeline.Evidence{Runs: 5}},
		{Path: `"evidence":{}`, Stage: "select", Verdict: pipeline.Keep, Reason: "selected", Detail: `"stage":"env"`},
		{Path: "a", Stage: "flaky", Verdict: pipeline.Keep, Reason: "verifier_unproven", Proof: "none"},
		{Path: `"proof":"none"`, Stage: "dedup", Verdict: pipeline.Keep, Reason: "unique"},
	} {
		line, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		ignored := d.Verdict == pipeline.Keep && d.Evidence == nil && d.Proof == "" && d.Stage != filters.StageEnv
		if got := mayCount(line); got == ignored {
			t.Errorf("mayCount(%s) = %v, want %v", line, got, !ignored)
		}
	}
}

// proofRunDir copies testdata/proofrun: a run of validate, flaky and
// select whose gate decisions stand on every proof kind (one served from
// the ledger, one error without a proof) and whose select drops one
// unproven task.
func proofRunDir(t *testing.T) string {
	t.Helper()
	return runFixture(t, "proofrun")
}

// runFixture copies testdata/NAME's summary.json and decisions.jsonl to a
// temporary run directory.
func runFixture(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{rundir.SummaryFile, rundir.DecisionsFile} {
		data, err := os.ReadFile(filepath.Join("testdata", name, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBuildReportProofs checks the report's proof table against the
// fixture's decisions (counted by hand below) and against summary.json's
// figures, which must agree with them.
func TestBuildReportProofs(t *testing.T) {
	dir := proofRunDir(t)
	r, err := LoadBuildReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []ProofRow{
		{Proof: "oracle", InOutput: 2, Kept: 2, Runs: 14, SandboxSeconds: 20, FromLedger: 1},
		{Proof: "supplied", InOutput: 1, Kept: 1, Runs: 14, SandboxSeconds: 12},
		{Proof: "policy", InOutput: 1, Kept: 1, Dropped: 1, Runs: 22, SandboxSeconds: 150},
		{Proof: "none", InOutput: 2, Kept: 3, Dropped: 1, Runs: 20, SandboxSeconds: 25},
	}
	if len(r.Proofs) != len(want) {
		t.Fatalf("proof rows %+v", r.Proofs)
	}
	for i, w := range want {
		got := r.Proofs[i]
		got.Meaning = ""
		if got != w {
			t.Errorf("row %d: %+v, want %+v", i, got, w)
		}
	}
	if r.UnprovenKept != 2 || r.ProofMismatch != "" {
		t.Errorf("unproven kept %d, mismatch %q", r.UnprovenKept, r.ProofMismatch)
	}
	// summary.json says the same, stage line and output.
	var flaky *pipeline.StageSummary
	for _, f := range r.Summary.Funnel {
		if f.Stage == "flaky" {
			flaky = f
		}
	}
	for _, row := range r.Proofs {
		p := flaky.Proofs[row.Proof]
		if p == nil || p.Kept != row.Kept || p.Dropped != row.Dropped || p.Runs != row.Runs || p.SandboxSeconds != row.SandboxSeconds ||
			p.FromLedger != row.FromLedger || r.Summary.KeptByProof[row.Proof] != row.InOutput {
			t.Errorf("%s: summary.json %+v (output %d), decisions.jsonl %+v", row.Proof, p, r.Summary.KeptByProof[row.Proof], row)
		}
	}

	var b bytes.Buffer
	r.Dir = "RUN_DIR"
	if err := r.Render(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "proofrun.report.html")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if g, err := os.ReadFile(golden); err != nil || !bytes.Equal(g, b.Bytes()) {
		t.Errorf("report differs from %s (run with -update after checking the change): %v", golden, err)
	}
	for _, s := range []string{"<b class=\"warn\">2 of them with an unproven verifier</b>", "<b class=\"warn\">2 (33.3%) have an unproven verifier</b>", "<h2>Verifier proof</h2>"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q", s)
		}
	}

	// A summary that disagrees with the decisions is said to.
	r.Summary.KeptByProof["none"] = 3
	r.setSummary(r.Summary)
	if !strings.Contains(r.ProofMismatch, "decisions.jsonl") {
		t.Errorf("a summary claiming 3 unproven tasks where the decisions show 2 was not flagged: %q", r.ProofMismatch)
	}
}

// TestBuildReportWithoutProofs: a run whose decisions record no proof
// (no gate, or one from before proofs) has no proof section.
func TestBuildReportWithoutProofs(t *testing.T) {
	r, err := LoadBuildReport(buildRunDir(t))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := r.Render(&b); err != nil {
		t.Fatal(err)
	}
	if r.Proofs != nil || strings.Contains(b.String(), "Verifier proof") || strings.Contains(b.String(), "unproven") {
		t.Errorf("proof rows %+v in a run without proofs", r.Proofs)
	}
}
