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

// TestMergeSolutionsStaysInside: the merge copies the shards' discovered
// solutions into dst and nowhere else, and never changes an entry dst
// already holds. A store entry is only what the prover wrote (regular
// files under the task hash's directory): a key that is a symlink to a
// directory elsewhere is not followed, and an entry holding a symlink
// (to a host file, or into another task's entry) stops the merge before
// anything of it is written; another task's entry keeps its bytes in
// every case.
func TestMergeSolutionsStaysInside(t *testing.T) {
	base := t.TempDir()
	s0, s1, merged := filepath.Join(base, "s0"), filepath.Join(base, "s1"), filepath.Join(base, "merged")
	dst := filepath.Join(merged, "solutions")
	secret := filepath.Join(base, "host-secret")
	if err := os.WriteFile(secret, []byte("token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(base, "elsewhere")
	putEntry(t, outside, "k", `{"elsewhere":1}`, "echo elsewhere\n") // outside/solutions/k
	putEntry(t, merged, "kept", `{"merged":1}`, "echo merged\n")     // from an earlier merge
	putEntry(t, s0, "kept", `{"s0":1}`, "echo s0\n")
	putEntry(t, s0, "new", `{"new":1}`, "echo new\n")
	if err := os.MkdirAll(filepath.Join(s1, "solutions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "solutions", "k"), filepath.Join(s1, "solutions", "linked")); err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string]string {
		t.Helper()
		files := map[string]string{}
		if err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, _ := os.ReadFile(p)
			files[p] = string(data)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return files
	}
	beforeOutside := snapshot()

	res, err := MergeSolutions([]*ShardRun{{Dir: s0}, {Dir: s1}}, "solutions", dst)
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 1 || len(res.Conflicts) != 1 || !strings.HasPrefix(res.Conflicts[0], "kept: ") {
		t.Errorf("result %+v, want new copied and kept reported as a conflict", res)
	}
	after := snapshot()
	for p, data := range after {
		if _, was := beforeOutside[p]; !was && !strings.HasPrefix(p, filepath.Join(dst, "new")+string(filepath.Separator)) {
			t.Errorf("the merge wrote %s (%q): only dst/new was to be added", p, data)
		}
	}
	for p, data := range beforeOutside {
		if after[p] != data {
			t.Errorf("the merge changed %s: %q → %q", p, data, after[p])
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "linked")); !os.IsNotExist(err) {
		t.Errorf("a symlinked key was followed into the merged store: %v", err)
	}

	// Entries holding a symlink: to a host file, and into another entry.
	for _, c := range []struct{ name, target string }{
		{"host-file", secret},
		{"into-kept", filepath.Join("..", "..", "kept", "solution", "solve.sh")},
	} {
		t.Run(c.name, func(t *testing.T) {
			s2, key := filepath.Join(base, "s2-"+c.name), "evil-"+c.name
			putEntry(t, s2, key, `{"evil":1}`, "")
			if err := os.Symlink(c.target, filepath.Join(s2, "solutions", key, "solution", "solve.sh")); err != nil {
				t.Fatal(err)
			}
			before := snapshot()
			if _, err := MergeSolutions([]*ShardRun{{Dir: s2}}, "solutions", dst); err == nil {
				t.Error("an entry holding a symlink was merged")
			}
			if _, err := os.Lstat(filepath.Join(dst, key)); !os.IsNotExist(err) {
				t.Errorf("the entry reached the merged store: %v", err)
			}
			if left, _ := filepath.Glob(filepath.Join(dst, ".merging-*")); len(left) > 0 {
				t.Errorf("temporary directories left: %v", left)
			}
			now := snapshot()
			for p, data := range before {
				if now[p] != data {
					t.Errorf("%s changed: %q → %q", p, data, now[p])
				}
			}
			if len(now) != len(before) {
				t.Errorf("%d files after, %d before", len(now), len(before))
			}
		})
	}
}
