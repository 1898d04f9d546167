package filters_test

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// TestCheatStage runs the cheat stage on the real engine: verifiers that
// check only that a file exists, or that it parses, are dropped with the
// cheat that passed; verifiers that check content computed from the input,
// and the Harbor examples, are kept; a second build is served by the
// ledger.
func TestCheatStage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-cheat-")
	const df = "FROM debian:bookworm\nWORKDIR /app\nRUN mkdir -p /app/data && printf '3\\n4\\n5\\n' > /app/data/in.txt\n"
	const instr = "Sum the numbers in `/app/data/in.txt` (one per line) and write the total to `/app/out.txt`.\n"
	const solve = "#!/bin/bash\nawk '{s+=$1} END {print s}' /app/data/in.txt > /app/out.txt\n"
	reward := func(cond string) string {
		return "#!/bin/bash\nif " + cond + "; then echo checked-ok; echo 1 > /logs/verifier/reward.txt; else echo checked-bad; echo 0 > /logs/verifier/reward.txt; fi\n"
	}
	task := func(instruction, test string) map[string]string {
		return map[string]string{
			"instruction.md":         instruction,
			"task.toml":              "[verifier]\ntimeout_sec = 30\n[agent]\ntimeout_sec = 30\n",
			"environment/Dockerfile": df,
			"tests/test.sh":          test,
			"solution/solve.sh":      solve,
		}
	}
	tasks := []struct {
		path, reason, cheat string
		files               map[string]string
	}{
		{"exists-only", filters.ReasonVerifierAcceptsTrivial, "touch cheat", task(instr, reward("test -f /app/out.txt"))},
		{"nonempty-only", filters.ReasonVerifierAcceptsTrivial, "plausible cheat", task(instr, reward("test -s /app/out.txt"))},
		{"json-parses", filters.ReasonVerifierAcceptsTrivial, "plausible cheat",
			task("Write a summary of `/app/data/in.txt` as JSON to `/app/summary.json`.\n", reward("grep -q '^{' /app/summary.json"))},
		// Trusts what the agent printed: only the echo cheat passes, and the
		// evidence keeps its run's log, not the failing weaker cheats' after it.
		{"agent-log", filters.ReasonVerifierAcceptsTrivial, "echo cheat", task(instr, reward("test -s /logs/agent/cheat.txt"))},
		{"computed", filters.ReasonCheatsRejected, "", task(instr, reward(`[ "$(cat /app/out.txt 2>/dev/null)" = 12 ]`))},
		{"no-paths", filters.ReasonNoCheatTargets, "", task("Sum the numbers of the input file.\n", reward("test -f /app/out.txt"))},
		{"reward-missing", filters.ReasonCheatUnscored, "", task(instr, "#!/bin/bash\ntrue\n")},
	}
	for _, name := range []string{"hello-user", "hello-workdir"} {
		var buf bytes.Buffer
		if err := bundle.EncodeDir(&buf, filepath.Join("../testdata/harbor-examples", name)); err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, struct {
			path, reason, cheat string
			files               map[string]string
		}{path: name, reason: filters.ReasonCheatsRejected, files: map[string]string{"": buf.String()}})
	}

	name := filepath.Join(t.TempDir(), "pool.parquet")
	w, err := pool.Create(name, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		if blob, ok := tk.files[""]; ok {
			w.Write(tk.path, []byte(blob))
			continue
		}
		w.Write(tk.path, encodeTask(t, tk.files))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, _ := pool.Open(name)
	stages := []pipeline.Stage{filters.Validate{}, filters.Cheat{Runner: &trial.Runner{Backend: d}, Labels: map[string]string{sandbox.LabelRun: runID}}}
	runDir := filepath.Join(t.TempDir(), "run")
	got := map[string]pipeline.Decision{}
	if _, _, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, Workers: 2, RunDir: runDir,
		OnDecision: func(dec pipeline.Decision) { got[dec.Path] = dec }}); err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		dec := got[tk.path]
		t.Logf("%s: %s %s/%s: %s; evidence %+v", tk.path, dec.Stage, dec.Verdict, dec.Reason, dec.Detail, dec.Evidence)
		if dec.Stage != filters.StageCheat || dec.Reason != tk.reason {
			t.Errorf("%s: %s/%s at %s, want %s at cheat", tk.path, dec.Verdict, dec.Reason, dec.Stage, tk.reason)
			continue
		}
		if !strings.Contains(dec.Detail, tk.cheat) {
			t.Errorf("%s: detail %q does not name the %s", tk.path, dec.Detail, tk.cheat)
		}
		ev := dec.Evidence
		switch {
		case ev == nil:
			t.Errorf("%s: no evidence", tk.path)
		case tk.reason == filters.ReasonNoCheatTargets:
			if ev.Sandboxes != 0 || ev.Runs != 0 || ev.SandboxSeconds != 0 {
				t.Errorf("%s: evidence %+v, want no sandbox", tk.path, ev)
			}
		case tk.reason == filters.ReasonVerifierAcceptsTrivial:
			// The combined cheat, then the weaker ones up to the first pass.
			// The combined cheat passes, and so does the weaker one named
			// (echo is the combined one). The log is the passing run's,
			// even when a weaker cheat failed after it.
			wantPasses := 2
			if tk.cheat == "echo cheat" {
				wantPasses = 1
			}
			if ev.Passes != wantPasses || ev.Sandboxes < 2 || ev.SandboxSeconds <= 0 || !strings.Contains(dec.Detail, "/app/") || !strings.Contains(ev.Log, "checked-ok") {
				t.Errorf("%s: evidence %+v, want ≥ 2 sandboxes with %d passes, the created paths named and the passing run's log", tk.path, ev, wantPasses)
			}
		default:
			// Honest tasks: one sandbox, one verifier run.
			if ev.Sandboxes != 1 || ev.Runs != 1 || ev.Passes != 0 || ev.SandboxSeconds <= 0 {
				t.Errorf("%s: evidence %+v, want 1 sandbox, 1 run, no pass", tk.path, ev)
			}
		}
	}

	// Again on the same run dir: every cheat outcome from the ledger.
	again := map[string]pipeline.Decision{}
	sum, _, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, Workers: 2, RunDir: runDir,
		OnDecision: func(dec pipeline.Decision) { again[dec.Path] = dec }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.LedgerHits != int64(len(tasks)) {
		t.Errorf("second build: %d ledger hits, want %d", sum.LedgerHits, len(tasks))
	}
	for p, dec := range got {
		if a := again[p]; a.Reason != dec.Reason || a.Evidence == nil || !a.Evidence.FromLedger {
			t.Errorf("%s: second build %s (evidence %+v), first %s", p, a.Reason, a.Evidence, dec.Reason)
		}
	}
}

// encodeTask packs files (path → content; *.sh executable) as a bundle.
func encodeTask(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var entries []bundle.Entry
	for p, data := range files {
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		entries = append(entries, bundle.Entry{Name: p, Kind: bundle.KindFile, Mode: mode, Data: []byte(data)})
	}
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
