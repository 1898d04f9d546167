package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestProofFlagsRejectBadValues: the split and control flags of the proof
// of learning fail as usage errors instead of drawing an empty or wrong
// split.
func TestProofFlagsRejectBadValues(t *testing.T) {
	dir := t.TempDir()
	pool := "../../testdata/sample-pool.parquet"
	cases := [][]string{
		{"train", "--data", pool, "--run-dir", dir, "--test", "nosplit"},
		{"train", "--data", pool, "--run-dir", dir, "--test", "a/b=" + pool},
		{"train", "--data", pool, "--run-dir", dir, "--test", "x=" + pool, "--test", "x=" + pool},
		{"gen-pool", "-n", "2", "--dir", filepath.Join(dir, "p1"), "--phrasings", "3"},
		{"gen-pool", "-n", "2", "--dir", filepath.Join(dir, "p2"), "--variants", "no_such_template"},
		{"gen-pool", "-n", "2", "--dir", filepath.Join(dir, "p3"), "--paraphrases", filepath.Join(dir, "missing.jsonl")},
	}
	for _, args := range cases {
		if _, code := run(t, args...); code != exitUsage {
			t.Errorf("otcurate %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
}
