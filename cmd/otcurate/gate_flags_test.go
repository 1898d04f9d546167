package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSolutionsFlagWarnsUnknownEntries: a --solutions entry that names no
// task path of the pool is named in a warning once the pool is read (a
// typo would otherwise be silently ignored); entries of real paths and
// task_binary hashes are not; an unreadable DIR is a usage error.
func TestSolutionsFlagWarnsUnknownEntries(t *testing.T) {
	dir := t.TempDir()
	sol := filepath.Join(dir, "solutions")
	for _, key := range []string{"no-such-task", "hello-world", strings.Repeat("ab", 32)} {
		p := filepath.Join(sol, key, "solution")
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "solve.sh"), []byte("#!/bin/bash\ntrue\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A pool of one task directory named hello-world.
	pool := filepath.Join(dir, "pool")
	if err := os.CopyFS(filepath.Join(pool, "hello-world"), os.DirFS(filepath.Join(fixtures, "hello-world"))); err != nil {
		t.Skipf("fixture: %v", err)
	}
	build := func(solutions string) (string, int) {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs([]string{"build", "--pool", pool, "-o", filepath.Join(dir, "out.parquet"), "--run-dir", filepath.Join(dir, "run"),
			"--stages", "validate,lint", "--solutions", solutions, "--log-level", "warn"})
		code := exitCode(root.ExecuteContext(context.Background()), &errOut)
		return errOut.String(), code
	}
	stderr, code := build(sol)
	t.Log(stderr)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(stderr, "no-such-task") || strings.Contains(stderr, "hello-world") || strings.Contains(stderr, "abab") {
		t.Errorf("the warning should name no-such-task alone:\n%s", stderr)
	}
	if _, code := build(filepath.Join(dir, "missing")); code != exitUsage {
		t.Errorf("a missing --solutions DIR: exit %d, want %d", code, exitUsage)
	}
}
