package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/rundir"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
)

// TestBuildKilledDuringLedgerWrites is the red-team case on the real
// binary and engine: a build running the env stage is refused a second
// writer, then killed with SIGKILL while it appends to the ledger, and a
// torn fragment is left after the last entry (what a kill inside a write
// leaves; SIGKILL between writes leaves none, so the fragment is written
// here). The re-run is let in at once (the kernel dropped the lock),
// sets the fragment aside, serves every entry the killed run wrote from
// the ledger, and ends with one whole line per outcome.
func TestBuildKilledDuringLedgerWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the env stage")
	}
	eng, runID := sandboxtest.Engine(t, "lockkill-")
	t.Cleanup(func() { eng.GC(context.Background(), sandbox.GCOptions{Run: runID}) })
	dir := t.TempDir()
	bin := filepath.Join(dir, "otcurate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runDir := filepath.Join(dir, "run")
	ledger := filepath.Join(runDir, rundir.LedgerFile)
	args := []string{"build", "--pool", "../../testdata/sample-pool.parquet", "-o", filepath.Join(dir, "out.parquet"),
		"--run-dir", runDir, "--stages", "validate,env", "--workers", "2", "--run-id", runID}
	first := exec.Command(bin, args...)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	deadline := time.Now().Add(3 * time.Minute)
	for countLines(ledger) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no 3 ledger entries within 3 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}

	start := time.Now()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run directory "+runDir+" is in use by pid ") || time.Since(start) > 10*time.Second {
		t.Errorf("second build while the first runs: %v after %s\n%s", err, time.Since(start), out)
	}

	first.Process.Kill()
	first.Wait()
	eng.GC(context.Background(), sandbox.GCOptions{Run: runID})
	before := ledgerKeys(t, ledger)
	const fragment = `{"key":"x|env|","verdict":"dr`
	f, err := os.OpenFile(ledger, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(fragment)
	f.Close()

	second := exec.Command(bin, args...)
	var stderr bytes.Buffer
	second.Stderr = &stderr
	if err := second.Run(); err != nil {
		t.Fatalf("re-run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "torn last line set aside") {
		t.Errorf("no warning about the torn line:\n%s", stderr.String())
	}
	asides, _ := filepath.Glob(ledger + ".torn-*")
	if len(asides) != 1 {
		t.Fatalf("torn line set aside in %v, want one file", asides)
	}
	if b, _ := os.ReadFile(asides[0]); string(b) != fragment {
		t.Errorf("set aside %q, want %q", b, fragment)
	}
	var sum pipeline.Summary
	if b, err := os.ReadFile(filepath.Join(runDir, rundir.SummaryFile)); err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("summary: %v", err)
	}
	if sum.LedgerHits < int64(len(before)) {
		t.Errorf("ledger_hits %d, want at least the %d entries the killed run wrote", sum.LedgerHits, len(before))
	}
	after := ledgerKeys(t, ledger)
	for k := range before {
		if !after[k] {
			t.Errorf("entry %s lost", k)
		}
	}
	if sum.Funnel == nil || len(after) == 0 {
		t.Errorf("no funnel or empty ledger")
	}
}

func countLines(name string) int {
	b, _ := os.ReadFile(name)
	return bytes.Count(b, []byte("\n"))
}

// ledgerKeys reads a ledger file strictly: every line must be a whole
// entry.
func ledgerKeys(t *testing.T, name string) map[string]bool {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]bool{}
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for n := 1; s.Scan(); n++ {
		var e struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal(s.Bytes(), &e); err != nil || e.Key == "" {
			t.Fatalf("%s line %d is not an entry: %q", name, n, s.Text())
		}
		keys[e.Key] = true
	}
	return keys
}
