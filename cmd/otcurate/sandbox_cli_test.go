package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/rundir"
	"github.com/otcurate/otcurate/sandbox/docker"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
)

func dockerOrSkip(t *testing.T) *docker.Engine {
	t.Helper()
	if os.Getenv(sandboxtest.TierEnv) == "fake" {
		t.Skipf("needs the Docker engine: the engine tier runs it (%s=docker)", sandboxtest.TierEnv)
	}
	d, err := docker.New(context.Background(), docker.Options{RunID: "cli-test-probe"})
	if err != nil {
		if os.Getenv("OTCURATE_REQUIRE_DOCKER") != "" {
			t.Fatalf("Docker required: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// slowTask writes a task whose oracle sleeps, so a run can be interrupted
// while its sandbox is up.
func slowTask(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "slow-task")
	files := map[string]string{
		"instruction.md":         "wait\n",
		"task.toml":              "[agent]\ntimeout_sec = 300\n",
		"environment/Dockerfile": "FROM debian:bookworm\n",
		"tests/test.sh":          "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
		"solution/solve.sh":      "#!/bin/bash\nsleep 200\n",
	}
	writeTaskDir(t, dir, files)
	return dir
}

// writeTaskDir writes a task directory (every file executable, as the
// scripts need).
func writeTaskDir(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func buildBinary(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "otcurate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startAndWait starts `otcurate run` and waits until its sandbox exists.
func startAndWait(t *testing.T, d *docker.Engine, bin, task, runID string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(bin, "run", task, "--agent", "oracle", "--run-id", runID)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		left, err := d.Containers(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 {
			time.Sleep(time.Second) // let solve.sh start
			return cmd, &stderr
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no sandbox after 90 s\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRunCtrlCLeavesNoContainer: SIGINT mid-run exits 130 with nothing left.
func TestRunCtrlCLeavesNoContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Docker")
	}
	d := dockerOrSkip(t)
	bin, task := buildBinary(t), slowTask(t)
	runID := newRunID() + "-ctrlc"
	cmd, stderr := startAndWait(t, d, bin, task, runID)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\n%s", code, exitInterrupted, stderr.String())
	}
	if left, _ := d.Containers(context.Background(), runID); len(left) != 0 {
		t.Fatalf("containers left after Ctrl-C: %v", left)
	}
}

// TestKilledRunThenGC: SIGKILL skips every defer; `sandbox gc` removes the
// orphan (and only orphans, so concurrent runs are safe).
func TestKilledRunThenGC(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Docker")
	}
	d := dockerOrSkip(t)
	bin, task := buildBinary(t), slowTask(t)
	runID := newRunID() + "-kill"
	cmd, _ := startAndWait(t, d, bin, task, runID)
	cmd.Process.Kill()
	cmd.Wait()
	// The agent's sandbox, and in the default fresh mode the verifier's,
	// started while the agent acts: both orphans.
	if left, _ := d.Containers(context.Background(), runID); len(left) == 0 || len(left) > 2 {
		t.Fatalf("after SIGKILL: %d containers, want the orphans (the agent's and the verifier's)", len(left))
	}
	out, err := exec.Command(bin, "sandbox", "gc").CombinedOutput()
	if err != nil {
		t.Fatalf("sandbox gc: %v\n%s", err, out)
	}
	if left, _ := d.Containers(context.Background(), runID); len(left) != 0 {
		t.Fatalf("containers left after gc: %v\n%s", left, out)
	}
}

// TestKilledBuildResumesAndCleansUp: a build killed with SIGKILL while a
// sandbox is up leaves that container behind; re-running the same command
// removes it (the janitor at the start of every run), reuses the verdicts
// already in the ledger and finishes with nothing left.
func TestKilledBuildResumesAndCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Docker")
	}
	d := dockerOrSkip(t)
	bin := buildBinary(t)
	dir := t.TempDir()
	// Two quick tasks, then one whose oracle takes 20 s (pool order, one
	// worker: the quick ones are decided before the slow one starts).
	mk := func(name, solve string) string {
		p := filepath.Join(dir, "tasks", name)
		files := map[string]string{
			"instruction.md":         "touch /app/done (" + name + ")\n",
			"task.toml":              "[agent]\ntimeout_sec = 120\n",
			"environment/Dockerfile": "FROM debian:bookworm\nWORKDIR /app\n",
			"tests/test.sh":          "#!/bin/bash\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
			"solution/solve.sh":      "#!/bin/bash\n" + solve + "touch /app/done\n",
		}
		writeTaskDir(t, p, files)
		return p
	}
	mk("a-quick", "")
	mk("b-quick", "")
	mk("c-slow", "sleep 20\n")
	runDir := filepath.Join(dir, "run")
	args := []string{"build", "--pool", filepath.Join(dir, "tasks"), "-o", filepath.Join(dir, "out.parquet"), "--run-dir", runDir,
		"--workers", "1", "--flaky-repeats", "2"}
	runID := newRunID() + "-killed"
	cmd := exec.Command(bin, append(args, "--run-id", runID)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the slow task's sandbox.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		left, err := d.Containers(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		// The quick tasks' env and flaky outcomes and the slow one's env
		// are in the ledger, and a sandbox is up: the slow task's flaky
		// stage. Its oracle session sleeps 20 s; let it get there.
		if len(left) > 0 && ledgerHas(t, runDir, 5) {
			time.Sleep(4 * time.Second)
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the slow task never started\n%s", stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if left, _ := d.Containers(context.Background(), runID); len(left) == 0 {
		t.Fatal("SIGKILL left no container: the test did not kill mid-run")
	}

	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed build: %v\n%s", err, out)
	}
	if left, _ := d.Containers(context.Background(), runID); len(left) != 0 {
		t.Errorf("the killed run's containers survived the resumed run: %v", left)
	}
	var sum pipeline.Summary
	data, err := os.ReadFile(filepath.Join(runDir, rundir.SummaryFile))
	if err != nil || json.Unmarshal(data, &sum) != nil {
		t.Fatalf("summary: %v", err)
	}
	if sum.LedgerHits < 4 || sum.TasksKept != 3 || sum.Interrupted {
		t.Errorf("resumed run: %d ledger hits (want ≥ 4: env and flaky of the two quick tasks), %d kept (want 3), interrupted %v\n%s",
			sum.LedgerHits, sum.TasksKept, sum.Interrupted, out)
	}
}

// ledgerHas reports whether the run's ledger holds at least n outcomes.
func ledgerHas(t *testing.T, runDir string, n int) bool {
	data, err := os.ReadFile(filepath.Join(runDir, rundir.LedgerFile))
	if err != nil {
		return false
	}
	return bytes.Count(data, []byte("\n")) >= n
}
