package filters_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

func sbTask(t *testing.T, dockerfile, testSh, solveSh string) []byte {
	t.Helper()
	entries := []bundle.Entry{
		{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("Create /app/done.\n")},
		{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("[verifier]\ntimeout_sec = 30\n[agent]\ntimeout_sec = 30\n")},
		{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(dockerfile)},
		{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(testSh)},
		{Name: "solution/solve.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(solveSh)},
	}
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestEnvAndFlakyStages runs the sandbox stages on one task per defect the
// verifier gate must catch, on the real engine.
func TestEnvAndFlakyStages(t *testing.T) {
	sandboxtest.Parallel(t)
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-stages-")

	const df = "FROM debian:bookworm\nWORKDIR /app\n"
	const solve = "#!/bin/bash\ntouch /app/done\n"
	const check = "#!/bin/bash\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	tasks := []struct {
		path, reason string
		blob         []byte
	}{
		{"good", filters.ReasonOraclePasses, sbTask(t, df, check, solve)},
		{"build-fails", string(trial.BuildFailed), sbTask(t, df+"RUN exit 3\n", check, solve)},
		{"build-slow", filters.ReasonEnvSlowBuild, sbTask(t, df+"RUN sleep 60\n", check, solve)},
		{"nop-passes", filters.ReasonNopPasses, sbTask(t, df, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", solve)},
		{"wrong-oracle", filters.ReasonOracleFails, sbTask(t, df, check, "#!/bin/bash\ntrue\n")},
		// Alternates 0 and 1 on the same post-solution state.
		{"flaky-verifier", filters.ReasonFlakyVerifier, sbTask(t, df,
			"#!/bin/bash\nn=$(cat /tmp/n 2>/dev/null || echo 0); echo $((n+1)) > /tmp/n\n[ -f /app/done ] && [ $((n % 2)) -eq 0 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n", solve)},
		{"slow-verifier", filters.ReasonSlowVerifier, sbTask(t, df, "#!/bin/bash\nsleep 12\n"+check[len("#!/bin/bash\n"):], solve)},
		{"reward-missing", string(trial.RewardMissing), sbTask(t, df, "#!/bin/bash\necho no reward here; true > /logs/verifier/reward.txt.bak\n", solve)},
	}
	name := filepath.Join(t.TempDir(), "pool.parquet")
	w, err := pool.Create(name, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		w.Write(tk.path, tk.blob)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, _ := pool.Open(name)
	runner := &trial.Runner{Backend: d}
	labels := map[string]string{sandbox.LabelRun: runID}
	env := filters.NewEnv(runner, bundle.Limits{}, labels)
	env.MaxBuild = 8 * time.Second
	stages := []pipeline.Stage{
		filters.Validate{},
		env,
		filters.Flaky{Runner: runner, Labels: labels, Repeats: 4, MaxVerify: 5 * time.Second},
	}
	got := map[string]pipeline.Decision{}
	runDir := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	_, _, err = pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, Workers: 2, RunDir: runDir,
		OnDecision: func(dec pipeline.Decision) { got[dec.Path] = dec }})
	if err != nil {
		t.Fatal(err)
	}
	first := time.Since(start)

	// The same pool and settings again: every sandbox outcome comes from
	// the ledger, identical (the time ratio is logged, not asserted).
	again := map[string]pipeline.Decision{}
	start = time.Now()
	sum, _, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, Workers: 2, RunDir: runDir,
		OnDecision: func(dec pipeline.Decision) { again[dec.Path] = dec }})
	if err != nil {
		t.Fatal(err)
	}
	second := time.Since(start)
	t.Logf("first run %v, second run %v (%.1f%%), ledger hits %d", first.Round(time.Millisecond), second.Round(time.Millisecond),
		100*second.Seconds()/first.Seconds(), sum.LedgerHits)
	if sum.LedgerHits < int64(len(tasks)) {
		t.Errorf("second run reused %d outcomes, want at least %d", sum.LedgerHits, len(tasks))
	}
	for p, d := range got {
		if a := again[p]; a.Stage != d.Stage || a.Verdict != d.Verdict || a.Reason != d.Reason {
			t.Errorf("%s: second run %s %s/%s, first %s %s/%s", p, a.Stage, a.Verdict, a.Reason, d.Stage, d.Verdict, d.Reason)
		}
	}
	for _, tk := range tasks {
		dec := got[tk.path]
		t.Logf("%s: %s %s/%s: %s", tk.path, dec.Stage, dec.Verdict, dec.Reason, dec.Detail)
		if dec.Reason != tk.reason {
			t.Errorf("%s: %s/%s at %s, want reason %s", tk.path, dec.Verdict, dec.Reason, dec.Stage, tk.reason)
		}
	}

	// The evidence behind the verdicts: runs spent, passes, sandboxes,
	// sandbox time, and the log excerpt of a drop; served from the ledger
	// the second time.
	ev := func(m map[string]pipeline.Decision, path string) pipeline.Evidence {
		t.Helper()
		if m[path].Evidence == nil {
			t.Fatalf("%s: no evidence on the %s decision", path, m[path].Stage)
		}
		return *m[path].Evidence
	}
	// nop 3+2 over two sandboxes, then the oracle 2+2 over two more.
	if e := ev(got, "good"); e.Runs != 9 || e.Passes != 4 || e.Sandboxes != 4 || e.SandboxSeconds <= 0 || e.VerifierSeconds <= 0 || e.FromLedger || e.Log != "" {
		t.Errorf("good: evidence %+v, want 9 runs, 4 passes, 4 sandboxes, positive times, no log", e)
	}
	// nop 0 (3+2 runs), then the oracle: 1 then 0 on the same state.
	if e := ev(got, "flaky-verifier"); e.Runs != 7 || e.Passes != 1 || e.Sandboxes != 3 {
		t.Errorf("flaky-verifier: evidence %+v, want 7 runs, 1 pass, 3 sandboxes", e)
	}
	// A verifier over the limit on the untouched environment costs one
	// run: the session stops there.
	if e := ev(got, "slow-verifier"); e.Runs != 1 || e.Sandboxes != 1 {
		t.Errorf("slow-verifier: evidence %+v, want 1 run in 1 sandbox", e)
	}
	if e := ev(got, "build-fails"); e.Runs != 0 || !strings.Contains(e.Log, "exit 3") {
		t.Errorf("build-fails: evidence %+v, want no runs and the build log", e)
	}
	if e := ev(again, "good"); !e.FromLedger || e.Runs != 9 {
		t.Errorf("good, second run: evidence %+v, want the first run's, from the ledger", e)
	}
}

// TestEnvRepeatsCatchUnstableEnvironments measures environments several
// times each (the later ones rebuilt without cache): a Dockerfile whose RUN
// step fails half the time is dropped as unstable (12 measurements: all
// agreeing has probability 2^-11), a stable one is kept with its 3
// measurements in its evidence, and one that always fails stays
// build_failed.
func TestEnvRepeatsCatchUnstableEnvironments(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-env-repeats-")
	const df = "FROM debian:bookworm\nWORKDIR /app\n"
	const check = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
	tasks := map[string]string{
		"stable":   df + "RUN echo repeats-" + runID + " > /marker\n",
		"coinflip": df + "RUN test $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) -eq 0 # " + runID + "\n",
		"broken":   df + "RUN exit 3 # " + runID + "\n",
	}
	for name, dockerfile := range tasks {
		env := filters.NewEnv(&trial.Runner{Backend: d}, bundle.Limits{}, map[string]string{sandbox.LabelRun: runID})
		env.Repeats = 3
		if name == "coinflip" {
			env.Repeats = 12
		}
		task, err := trial.LoadTask(name, sbTask(t, dockerfile, check, "#!/bin/bash\ntrue\n"), bundle.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		it := &pipeline.Item{Task: &pipeline.Task{Path: name, Hash: task.Bundle.ContentHash}, Bundle: task.Bundle, Info: task.Info}
		out := env.Process(context.Background(), it)
		t.Logf("%s: %s/%s: %s", name, out.Verdict, out.Reason, out.Detail)
		want := map[string]string{"stable": filters.ReasonEnvStable, "coinflip": filters.ReasonEnvUnstable, "broken": string(trial.BuildFailed)}[name]
		if out.Reason != want {
			t.Errorf("%s: %s, want %s", name, out.Reason, want)
		}
		if name == "stable" && (out.Evidence == nil || out.Evidence.Sandboxes != 3) {
			t.Errorf("stable: evidence %+v, want 3 measurements", out.Evidence)
		}
	}
}
