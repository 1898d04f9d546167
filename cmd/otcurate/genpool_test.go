package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/poolgen"
)

// TestGenPoolPyMethods: --pymethods-share writes solution-less tasks with
// their hidden solutions under --solutions, --base keeps an existing
// pool's rows and labels first, and bad family rates are usage errors.
func TestGenPoolPyMethods(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.parquet")
	if _, code := run(t, "gen-pool", "-n", "4", "--seed", "2", "--rates", "none", "-o", base); code != 0 {
		t.Fatalf("base: exit %d", code)
	}
	out, sols := filepath.Join(dir, "mixed.parquet"), filepath.Join(dir, "solutions")
	stdout, code := run(t, "gen-pool", "-n", "5", "--seed", "2", "--pymethods-share", "1", "--pymethods-rates", "none",
		"--prefix", "pm", "--solutions", sols, "--base", base, "-o", out)
	if code != 0 || !strings.Contains(stdout, "wrote 9 tasks") {
		t.Fatalf("exit %d: %s", code, stdout)
	}
	f, err := os.Open(filepath.Join(dir, "mixed.labels.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	labels, err := poolgen.ReadLabels(f)
	if err != nil || len(labels) != 9 {
		t.Fatalf("%d labels: %v", len(labels), err)
	}
	for i, l := range labels {
		if free := l.Family == poolgen.FamilyPyMethods; free != (i >= 4) {
			t.Errorf("label %d: %s is %s", i, l.Path, l.Family)
		}
		if l.Family == poolgen.FamilyPyMethods {
			if _, err := os.Stat(filepath.Join(sols, l.Path, "solution", "solve.sh")); err != nil {
				t.Errorf("%s: no hidden solution: %v", l.Path, err)
			}
		}
	}
	for _, bad := range [][]string{
		{"--pymethods-rates", "wrong_oracle=0.1"},
		{"--pymethods-rates", "nop_passes=2"},
		{"--pymethods-share", "1.5"},
	} {
		args := append([]string{"gen-pool", "-n", "2", "-o", filepath.Join(dir, "bad.parquet")}, bad...)
		if _, code := run(t, args...); code == 0 {
			t.Errorf("gen-pool %v: exit 0", bad)
		}
	}
	if _, code := run(t, "gen-pool", "-n", "2", "--seed", "2", "--rates", "none", "--base", base, "-o", filepath.Join(dir, "clash.parquet")); code == 0 {
		t.Error("a generated path already in --base: exit 0")
	}
}
