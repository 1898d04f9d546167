package filters_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

const (
	gateDockerfile = "FROM debian:bookworm\nWORKDIR /app\n"
	gateSolve      = "#!/bin/bash\ntouch /app/done\n"
	gateCheck      = "#!/bin/bash\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
)

// gateTask is a task bundle; solve "" ships no solution/.
func gateTask(t *testing.T, testSh, solve string) []byte {
	t.Helper()
	entries := []bundle.Entry{
		{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("Create /app/done.\n")},
		{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("[verifier]\ntimeout_sec = 30\n[agent]\ntimeout_sec = 30\n")},
		{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(gateDockerfile)},
		{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(testSh)},
	}
	if solve != "" {
		entries = append(entries, bundle.Entry{Name: "solution/solve.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(solve)})
	}
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// solutionBlob packs a solution_binary value: solve.sh under prefix
// ("solution/" or "" for the flat shape).
func solutionBlob(t *testing.T, prefix, solve string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, []bundle.Entry{{Name: prefix + "solve.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(solve)}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type gateRow struct {
	Path     string  `parquet:"path"`
	Task     []byte  `parquet:"task_binary"`
	Solution *[]byte `parquet:"solution_binary,optional"`
}

func writeGatePool(t *testing.T, name string, rows []gateRow) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[gateRow](f)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestGateWithoutOracle runs the verifier gate over tasks with every kind
// of positive evidence and none: the bundle's oracle, a solution_binary
// column (both archive shapes, a broken one, a wrong one), --solutions by
// path and by task hash, nothing; then checks the proofs in the decisions
// and the manifest, that the output keeps exactly path + task_binary with
// the bytes unchanged, and that --require-proof re-decides only the
// tasks without an oracle.
func TestGateWithoutOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-gate-")
	dir := t.TempDir()
	sol := func(b []byte) *[]byte { return &b }
	byHash := gateTask(t, gateCheck+"# by hash\n", "")
	cases := []struct {
		row         gateRow
		verdict     pipeline.Verdict
		reason      string
		proof       string
		flag        string
		detail      string
		runs, boxes int
	}{
		{gateRow{Path: "oracle", Task: gateTask(t, gateCheck, gateSolve), Solution: sol([]byte("ignored: the bundle has an oracle"))},
			pipeline.Keep, filters.ReasonOraclePasses, filters.ProofOracle, "", "nop: 5 verifier runs in 2 sandboxes; oracle: 4 verifier runs in 2 sandboxes", 9, 4},
		{gateRow{Path: "unproven", Task: gateTask(t, gateCheck, "")},
			pipeline.Keep, filters.ReasonVerifierUnproven, filters.ProofNone, "", "nop: 5 verifier runs in 2 sandboxes", 5, 2},
		{gateRow{Path: "nop-passes", Task: gateTask(t, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "")},
			pipeline.Drop, filters.ReasonNopPasses, filters.ProofNone, "", "nop: 3 verifier runs in 1 sandboxes", 3, 1},
		{gateRow{Path: "reward-missing", Task: gateTask(t, "#!/bin/bash\necho no reward\n", "")},
			pipeline.Drop, string(trial.RewardMissing), filters.ProofNone, "", "", 1, 1},
		{gateRow{Path: "column", Task: gateTask(t, gateCheck+"# column\n", ""), Solution: sol(solutionBlob(t, "solution/", gateSolve))},
			pipeline.Keep, filters.ReasonSolutionPasses, filters.ProofSupplied, "", "solution_binary column", 9, 4},
		{gateRow{Path: "column-flat", Task: gateTask(t, gateCheck+"# flat\n", ""), Solution: sol(solutionBlob(t, "", gateSolve))},
			pipeline.Keep, filters.ReasonSolutionPasses, filters.ProofSupplied, "", "", 9, 4},
		{gateRow{Path: "column-wrong", Task: gateTask(t, gateCheck+"# wrong\n", ""), Solution: sol(solutionBlob(t, "", "#!/bin/bash\ntrue\n"))},
			pipeline.Drop, filters.ReasonSolutionFails, filters.ProofSupplied, "", "", 7, 3},
		{gateRow{Path: "column-not-gzip", Task: gateTask(t, gateCheck+"# bad\n", ""), Solution: sol([]byte("#!/bin/bash\ntouch /app/done\n"))},
			pipeline.Keep, filters.ReasonVerifierUnproven, filters.ProofNone, filters.FlagSolutionUnreadable, "solution_binary column: not a usable gzip tar", 5, 2},
		{gateRow{Path: "column-no-solve", Task: gateTask(t, gateCheck+"# nosolve\n", ""), Solution: sol(solutionBlob(t, "x/", gateSolve))},
			pipeline.Keep, filters.ReasonVerifierUnproven, filters.ProofNone, filters.FlagSolutionUnreadable, "holds no solve.sh", 5, 2},
		{gateRow{Path: "nested/by-path", Task: gateTask(t, gateCheck+"# by path\n", "")},
			pipeline.Keep, filters.ReasonSolutionPasses, filters.ProofSupplied, "", "--solutions", 9, 4},
		{gateRow{Path: "by-hash", Task: byHash},
			pipeline.Keep, filters.ReasonSolutionPasses, filters.ProofSupplied, "", hexSHA(byHash), 9, 4},
	}
	solDir := filepath.Join(dir, "solutions")
	for _, key := range []string{"nested/by-path", hexSHA(byHash)} {
		p := filepath.Join(solDir, filepath.FromSlash(key), "solution")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "solve.sh"), []byte(gateSolve), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var rows []gateRow
	for _, c := range cases {
		rows = append(rows, c.row)
	}
	poolName := filepath.Join(dir, "pool.parquet")
	writeGatePool(t, poolName, rows)
	src, err := pool.Open(poolName)
	if err != nil {
		t.Fatal(err)
	}
	runner := &trial.Runner{Backend: d}
	labels := map[string]string{sandbox.LabelRun: runID}
	flaky := filters.Flaky{Runner: runner, Labels: labels, Repeats: 4, MaxVerify: 10 * time.Second, Solutions: filters.Solutions{Dir: solDir}}
	runDir, out := filepath.Join(dir, "run"), filepath.Join(dir, "out.parquet")
	build := func(f filters.Flaky) (map[string]pipeline.Decision, *pipeline.Summary) {
		t.Helper()
		got := map[string]pipeline.Decision{}
		sum, _, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: []pipeline.Stage{filters.Validate{}, f},
			Workers: 2, RunDir: runDir, Output: out, OnDecision: func(dec pipeline.Decision) { got[dec.Path] = dec }})
		if err != nil {
			t.Fatal(err)
		}
		return got, sum
	}
	got, _ := build(flaky)
	for _, c := range cases {
		dec := got[c.row.Path]
		t.Logf("%s: %s/%s proof=%s flags=%v: %s", c.row.Path, dec.Verdict, dec.Reason, dec.Proof, dec.Flags, dec.Detail)
		if dec.Stage != filters.StageFlaky || dec.Verdict != c.verdict || dec.Reason != c.reason || dec.Proof != c.proof {
			t.Errorf("%s: %s %s/%s proof %q, want flaky %s/%s proof %q", c.row.Path, dec.Stage, dec.Verdict, dec.Reason, dec.Proof, c.verdict, c.reason, c.proof)
		}
		if (c.flag != "") != (len(dec.Flags) > 0) || (c.flag != "" && dec.Flags[0] != c.flag) {
			t.Errorf("%s: flags %v, want %q", c.row.Path, dec.Flags, c.flag)
		}
		if !strings.Contains(dec.Detail, c.detail) {
			t.Errorf("%s: detail %q does not say %q", c.row.Path, dec.Detail, c.detail)
		}
		if ev := dec.Evidence; ev == nil || ev.Runs != c.runs || ev.Sandboxes != c.boxes {
			t.Errorf("%s: evidence %+v, want %d runs in %d sandboxes", c.row.Path, ev, c.runs, c.boxes)
		}
	}

	// The manifest's proof column.
	stages := []string{filters.StageValidate, filters.StageFlaky}
	tasks, err := rundir.ReadManifest(filepath.Join(runDir, rundir.ManifestFile), stages, filters.Layout())
	if err != nil {
		t.Fatal(err)
	}
	for i, tk := range tasks {
		var proof string
		for _, m := range tk.Marks {
			if m.Stage == filters.StageFlaky {
				proof = m.Proof()
			}
		}
		if proof != cases[i].proof {
			t.Errorf("manifest %s: proof %q, want %q", tk.Path, proof, cases[i].proof)
		}
	}

	// The output: exactly path + task_binary, the kept rows' bytes as
	// they were.
	checkOutput := func(wantKept map[string]bool) {
		t.Helper()
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for _, c := range pf.Schema().Columns() {
			cols = append(cols, strings.Join(c, "."))
		}
		if strings.Join(cols, ",") != "path,task_binary" {
			t.Errorf("output columns %v, want path, task_binary", cols)
		}
		osrc, err := pool.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		kept := map[string]bool{}
		err = osrc.Each(context.Background(), nil, func(r pool.Record) error {
			kept[r.Path] = true
			for _, c := range cases {
				if c.row.Path == r.Path && !bytes.Equal(c.row.Task, r.Blob) {
					t.Errorf("output %s: bytes changed", r.Path)
				}
			}
			if r.Solution != nil {
				t.Errorf("output %s carries a solution", r.Path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for p := range wantKept {
			if !kept[p] {
				t.Errorf("output lacks %s", p)
			}
		}
		if len(kept) != len(wantKept) {
			t.Errorf("output holds %d tasks, want %d", len(kept), len(wantKept))
		}
	}
	wantKept := map[string]bool{}
	for _, c := range cases {
		if c.verdict == pipeline.Keep {
			wantKept[c.row.Path] = true
		}
	}
	checkOutput(wantKept)

	// --require-proof: the tasks with neither an oracle nor a usable
	// supplied solution are decided again (the unproven ones dropped);
	// every other outcome comes from the ledger.
	flaky.RequireProof = true
	again, sum := build(flaky)
	redecided := 0
	for _, c := range cases {
		dec := again[c.row.Path]
		switch {
		case c.reason == filters.ReasonVerifierUnproven:
			redecided++
			delete(wantKept, c.row.Path)
			if dec.Verdict != pipeline.Drop || dec.Reason != filters.ReasonUnproven || dec.Proof != filters.ProofNone || dec.Evidence.FromLedger {
				t.Errorf("require-proof %s: %s/%s proof %q from ledger %v, want a fresh drop unproven", c.row.Path, dec.Verdict, dec.Reason, dec.Proof, dec.Evidence.FromLedger)
			}
		case c.proof == filters.ProofNone: // dropped on the negative side: same verdict, decided again
			redecided++
			if dec.Reason != c.reason || dec.Evidence == nil || dec.Evidence.FromLedger {
				t.Errorf("require-proof %s: %s/%s, want %s decided again", c.row.Path, dec.Verdict, dec.Reason, c.reason)
			}
		case dec.Reason != c.reason || dec.Evidence == nil || !dec.Evidence.FromLedger:
			t.Errorf("require-proof %s: %s/%s, want %s from the ledger", c.row.Path, dec.Verdict, dec.Reason, c.reason)
		}
	}
	if want := int64(len(cases) - redecided); sum.LedgerHits != want {
		t.Errorf("require-proof run: %d ledger hits, want %d", sum.LedgerHits, want)
	}
	checkOutput(wantKept)
}

// TestNopCatchesHalfPassingVerifier measures the negative side against a
// verifier that scores the untouched environment 1 with probability 0.5
// per run ($RANDOM): with the default 5 runs it escapes with probability
// 1/32, so ≥ 90% must be caught. 30 trials on the fake backend (12 on the
// engine); the bound allows 5 escapes of 30 (expected 0.94; P(≥ 6) < 1e-3).
func TestNopCatchesHalfPassingVerifier(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-gate-coin-")
	trials, allowed := 30, 5
	if os.Getenv(sandboxtest.TierEnv) == "docker" {
		trials, allowed = 12, 3
	}
	blob := gateTask(t, "#!/bin/bash\necho $(( RANDOM % 2 )) > /logs/verifier/reward.txt\n", "")
	task, err := trial.LoadTask("coin", blob, bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := filters.Flaky{Runner: &trial.Runner{Backend: d}, Labels: map[string]string{sandbox.LabelRun: runID}}
	reasons := map[string]int{}
	runs := 0
	for i := 0; i < trials; i++ {
		it := &pipeline.Item{Task: &pipeline.Task{Path: "coin", Hash: task.Bundle.ContentHash}, Record: pool.Record{Path: "coin", Blob: blob},
			Bundle: task.Bundle, Info: task.Info}
		out := f.Process(context.Background(), it)
		if out.Verdict == pipeline.Error {
			t.Fatalf("trial %d: %s: %s", i, out.Reason, out.Detail)
		}
		reasons[out.Reason]++
		runs += out.Evidence.Runs
	}
	escaped := reasons[filters.ReasonVerifierUnproven]
	t.Logf("%d trials: %v; caught %.1f%% (expected 96.9%%), %.2f verifier runs per trial", trials, reasons, 100*float64(trials-escaped)/float64(trials), float64(runs)/float64(trials))
	if escaped > allowed {
		t.Errorf("%d of %d trials escaped the negative side (allowed %d)", escaped, trials, allowed)
	}
	if reasons[filters.ReasonFlakyVerifier]+reasons[filters.ReasonNopPasses]+escaped != trials {
		t.Errorf("unexpected reasons %v", reasons)
	}
}

// fakeProver returns a scripted proof and counts its calls.
type fakeProver struct {
	proof filters.PolicyProof
	calls int
}

func (p *fakeProver) Prove(ctx context.Context, it *pipeline.Item, t *trial.Task) (filters.PolicyProof, error) {
	p.calls++
	return p.proof, nil
}

func (p *fakeProver) Fingerprint() string { return "fake-prover/v1" }

// proverRuns are results as a prover reports them: an attempt (repeat 0)
// then two re-verifications of its state (repeats 1, 2), then a replay.
func proverRuns(rewards ...float64) []trial.Result {
	var out []trial.Result
	for i, r := range rewards {
		r := r
		rep := i
		if i == len(rewards)-1 {
			rep = 0 // the replay: a fresh session
		}
		out = append(out, trial.Result{Agent: "policy", Repeat: rep, Outcome: trial.Scored, Reward: &r, Sandboxes: 1,
			Durations: trial.Durations{Start: 0.5, Verify: 0.2, Verifier: 0.1, Solve: 1}})
	}
	return out
}

// TestGateProver: the prover is asked only for a task with no oracle and
// no supplied solution whose negative side passed; its verdict decides,
// a solved task is kept with proof policy, an unsolved one falls through
// to verifier_unproven; its runs are in the evidence and its fingerprint
// in the ledger key of tasks without an oracle only.
func TestGateProver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-gate-prover-")
	flakyDrop := pipeline.DropOutcome(filters.ReasonFlakyVerifier, "re-verification disagreed")
	cases := []struct {
		name      string
		testSh    string
		solve     string
		proof     filters.PolicyProof
		calls     int
		reason    string
		wantProof string
		runs      int
	}{
		{"solved", gateCheck, "", filters.PolicyProof{Solved: true, Runs: proverRuns(1, 1, 1, 1), Detail: "attempt 1 passed"}, 1, filters.ReasonPolicySolves, filters.ProofPolicy, 5 + 4},
		{"flaky", gateCheck, "", filters.PolicyProof{Verdict: flakyDrop, Runs: proverRuns(1, 0)}, 1, filters.ReasonFlakyVerifier, filters.ProofPolicy, 5 + 2},
		{"unsolved", gateCheck, "", filters.PolicyProof{Runs: proverRuns(0, 0, 0), Detail: "0 of 3 attempts passed"}, 1, filters.ReasonVerifierUnproven, filters.ProofNone, 5 + 3},
		{"oracle", gateCheck, gateSolve, filters.PolicyProof{Solved: true}, 0, filters.ReasonOraclePasses, filters.ProofOracle, 5 + 4},
		{"nop-passes", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "", filters.PolicyProof{Solved: true}, 0, filters.ReasonNopPasses, filters.ProofNone, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &fakeProver{proof: c.proof}
			f := filters.Flaky{Runner: &trial.Runner{Backend: d}, Labels: map[string]string{sandbox.LabelRun: runID}, Repeats: 4, Prover: p}
			blob := gateTask(t, c.testSh, c.solve)
			task, err := trial.LoadTask(c.name, blob, bundle.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			it := &pipeline.Item{Task: &pipeline.Task{Path: c.name, Hash: task.Bundle.ContentHash}, Record: pool.Record{Path: c.name, Blob: blob},
				Bundle: task.Bundle, Info: task.Info}
			out := f.Process(context.Background(), it)
			t.Logf("%s/%s proof=%s: %s", out.Verdict, out.Reason, out.Proof, out.Detail)
			if out.Reason != c.reason || out.Proof != c.wantProof || p.calls != c.calls {
				t.Errorf("%s/%s proof %q, prover called %d times; want %s proof %q, %d calls", out.Verdict, out.Reason, out.Proof, p.calls, c.reason, c.wantProof, c.calls)
			}
			if out.Evidence.Runs != c.runs {
				t.Errorf("evidence %+v, want %d runs", out.Evidence, c.runs)
			}
			fp := f.ItemFingerprint(it)
			if hasProver := strings.Contains(fp, p.Fingerprint()); hasProver != (c.solve == "") {
				t.Errorf("item fingerprint %q: prover in it %v, want %v", fp, hasProver, c.solve == "")
			}
		})
	}
}
