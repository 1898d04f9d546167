package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// putEntry writes a solutions entry: store/key/trajectory.json and,
// when script is not empty, store/key/solution/solve.sh.
func putEntry(t *testing.T, runDir, key, traj, script string) {
	t.Helper()
	dir := filepath.Join(runDir, "solutions", key)
	if err := os.MkdirAll(filepath.Join(dir, "solution"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trajectory.json"), []byte(traj), 0o644); err != nil {
		t.Fatal(err)
	}
	if script != "" {
		if err := os.WriteFile(filepath.Join(dir, "solution", "solve.sh"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMergeSolutions: every shard's entries reach the merged store with
// their bytes and modes; an entry two shards hold identically is copied
// once; one they disagree on keeps the first shard's whole (never a mix
// of both) and is reported; a shard without a store is skipped; a second
// merge into the same directory copies nothing.
func TestMergeSolutions(t *testing.T) {
	base := t.TempDir()
	s0, s1, s2 := filepath.Join(base, "s0"), filepath.Join(base, "s1"), filepath.Join(base, "s2")
	for _, d := range []string{s0, s1, s2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	putEntry(t, s0, "aaa", `{"a":1}`, "echo a\n")
	putEntry(t, s0, "same", `{"s":1}`, "echo s\n")
	putEntry(t, s0, "clash", `{"first":1}`, "")
	putEntry(t, s1, "bbb", `{"b":1}`, "") // trajectory only: solve.sh did not pass as an oracle
	putEntry(t, s1, "same", `{"s":1}`, "echo s\n")
	putEntry(t, s1, "clash", `{"second":1}`, "echo second\n")
	// s2 has no store.
	runs := []*ShardRun{{Dir: s0}, {Dir: s1}, {Dir: s2}}
	dst := filepath.Join(base, "merged", "solutions")
	res, err := MergeSolutions(runs, "solutions", dst)
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 4 || res.Identical != 1 || len(res.Conflicts) != 1 {
		t.Fatalf("result %+v", res)
	}
	if c := res.Conflicts[0]; !strings.HasPrefix(c, "clash: ") || !strings.Contains(c, s1) || !strings.Contains(c, s0) {
		t.Errorf("conflict %q does not name the entry and both shards", c)
	}
	for _, c := range []struct{ name, want string }{
		{"aaa/trajectory.json", `{"a":1}`},
		{"aaa/solution/solve.sh", "echo a\n"},
		{"bbb/trajectory.json", `{"b":1}`},
		{"same/solution/solve.sh", "echo s\n"},
		{"clash/trajectory.json", `{"first":1}`},
	} {
		data, err := os.ReadFile(filepath.Join(dst, c.name))
		if err != nil || string(data) != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, data, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "clash", "solution", "solve.sh")); !os.IsNotExist(err) {
		t.Errorf("the kept entry got the other shard's solve.sh mixed in: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dst, "aaa", "solution", "solve.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("solve.sh lost its mode: %v %v", st, err)
	}
	left, _ := filepath.Glob(filepath.Join(dst, ".merging-*"))
	if len(left) > 0 {
		t.Errorf("temporary directories left: %v", left)
	}
	again, err := MergeSolutions(runs, "solutions", dst)
	if err != nil {
		t.Fatal(err)
	}
	if again.Copied != 0 || again.Identical != 5 || len(again.Conflicts) != 1 || again.Conflicts[0] != res.Conflicts[0] {
		t.Errorf("second merge %+v, want nothing copied, 5 identical (s0's 3, s1's 2), the same conflict", again)
	}
}
