package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestProveFlagsRejected: the prover's flags are checked before any
// sandbox starts.
func TestProveFlagsRejected(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range [][]string{{"--prove-attempts", "0"}, {"--prove-replays", "0"}, {"--prove-reverify", "-1"}} {
		args := append([]string{"build", "--pool", "../../testdata/sample-pool.parquet", "-o", filepath.Join(dir, "o.parquet"), "--run-dir", dir,
			"--stages", "validate,flaky", "--policy", "builtin"}, bad...)
		if _, code := run(t, args...); code != exitUsage {
			t.Errorf("otcurate %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	} // Without a policy (or without flaky) the flags would do nothing.
	for _, args := range [][]string{
		{"--stages", "validate,flaky", "--prove-attempts", "2"},
		{"--stages", "validate,lint", "--policy", "builtin", "--prove-replays", "2"},
	} {
		args = append([]string{"build", "--pool", "../../testdata/sample-pool.parquet", "-o", filepath.Join(dir, "o.parquet"), "--run-dir", dir}, args...)
		if _, code := run(t, args...); code != exitUsage {
			t.Errorf("otcurate %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
}
