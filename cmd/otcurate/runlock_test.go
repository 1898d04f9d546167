package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/rundir"
)

// runCaptured executes the CLI in-process and returns stderr and the exit
// code.
func runCaptured(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append(args, "--log-level", "warn"))
	code := exitCode(root.ExecuteContext(context.Background()), &errOut)
	t.Logf("otcurate %s → %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return errOut.String(), code
}

// TestWritersRefuseALockedRunDir: while a run directory is locked (by a
// second flock on it, which the kernel treats like another process's),
// every command that writes one fails at once naming the directory and the
// holder, and writes nothing there.
func TestWritersRefuseALockedRunDir(t *testing.T) {
	const sample = "../../testdata/sample-pool.parquet"
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	lock, err := rundir.Lock(runDir, "otcurate build --pool elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if err := os.Mkdir(filepath.Join(dir, "s0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"build", "--pool", sample, "-o", filepath.Join(dir, "o.parquet"), "--run-dir", runDir, "--stages", "validate,dedup"},
		{"filter", "--stage", "lint", "--in", sample, "-o", filepath.Join(dir, "o.parquet"), "--run-dir", runDir},
		{"validate", "--pool", sample, "--run-dir", runDir},
		{"merge", filepath.Join(dir, "s0"), "--run-dir", runDir, "-o", filepath.Join(dir, "o.parquet")},
		{"train", "--data", sample, "--run-dir", runDir},
	} {
		t.Run(args[0], func(t *testing.T) {
			start := time.Now()
			stderr, code := runCaptured(t, args...)
			if code == exitOK {
				t.Fatal("ran on a locked run directory")
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %s to refuse", took)
			}
			for _, want := range []string{"run directory " + runDir + " is in use by pid", "otcurate build --pool elsewhere"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q", want)
				}
			}
			ents, _ := os.ReadDir(runDir)
			if len(ents) != 1 {
				t.Errorf("run dir holds %d files, want the lock file only", len(ents))
			}
		})
	}
}

// TestMergeRefusesAShardStillBeingWritten: merge reads its shards only
// once no build holds them.
func TestMergeRefusesAShardStillBeingWritten(t *testing.T) {
	dir := t.TempDir()
	shard := filepath.Join(dir, "s0")
	lock, err := rundir.Lock(shard, "otcurate build --shard 0/2")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	stderr, code := runCaptured(t, "merge", shard, "--run-dir", filepath.Join(dir, "merged"), "-o", filepath.Join(dir, "o.parquet"))
	if code == exitOK || !strings.Contains(stderr, "shard run directory "+shard+" is in use") {
		t.Errorf("merge of a locked shard: exit %d", code)
	}
}
