//go:build unix

package beneath_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/beneath"
)

// snapshot lists a tree: every path with its type, mode and content.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := p + " " + info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case info.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			line += " " + string(data)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// setup makes base/outside (a sentinel tree) and base/root, in which
// symlinks lead out: up -> .., abs -> base/outside, rel -> ../outside,
// d/x -> ../../outside, and a link to a link (chain -> rel).
func setup(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	outside, root = filepath.Join(base, "outside"), filepath.Join(base, "root")
	for _, dir := range []string{outside, filepath.Join(outside, "keep"), filepath.Join(root, "d")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "keep", "sentinel"), []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"up": "..", "abs": outside, "rel": "../outside", "d/x": "../../outside", "chain": "rel"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root, outside
}

// TestNothingLeaves: every operation through a planted symlink fails
// (with ErrSymlink where a link was in the way) and leaves the sentinel
// tree outside exactly as it was, with openat2 and with the walk.
func TestNothingLeaves(t *testing.T) {
	type op struct {
		name    string
		do      func(d *beneath.Dir) error
		errIs   error // nil: the op must succeed
		rootGot string
	}
	ops := []op{
		{"mkdirall through abs", func(d *beneath.Dir) error { return d.MkdirAll("abs/keep/new", 0o755) }, beneath.ErrSymlink, ""},
		{"mkdirall through up", func(d *beneath.Dir) error { return d.MkdirAll("up/outside/new", 0o755) }, beneath.ErrSymlink, ""},
		{"mkdirall onto a link", func(d *beneath.Dir) error { return d.MkdirAll("rel", 0o755) }, beneath.ErrSymlink, ""},
		{"mkdir through rel", func(d *beneath.Dir) error { return d.Mkdir("rel/new", 0o755) }, beneath.ErrSymlink, ""},
		{"create through a nested link", func(d *beneath.Dir) error { _, err := d.Create("d/x/keep/f", 0o644); return err }, beneath.ErrSymlink, ""},
		{"create through a link to a link", func(d *beneath.Dir) error { _, err := d.Create("chain/f", 0o644); return err }, beneath.ErrSymlink, ""},
		{"create onto a link", func(d *beneath.Dir) error { _, err := d.Create("abs", 0o644); return err }, fs.ErrExist, ""},
		{"open through a link", func(d *beneath.Dir) error { _, err := d.Open("abs/keep/sentinel"); return err }, beneath.ErrSymlink, ""},
		{"open a link", func(d *beneath.Dir) error { _, err := d.Open("chain"); return err }, beneath.ErrSymlink, ""},
		{"symlink through a link", func(d *beneath.Dir) error { return d.Symlink("x", "rel/keep/l") }, beneath.ErrSymlink, ""},
		{"chmod through a link", func(d *beneath.Dir) error { return d.ChmodDir("rel/keep", 0o700) }, beneath.ErrSymlink, ""},
		{"chmod a link", func(d *beneath.Dir) error { return d.ChmodDir("abs", 0o700) }, beneath.ErrSymlink, ""},
		{"exists through a link", func(d *beneath.Dir) error { _, err := d.Exists("abs/keep"); return err }, beneath.ErrSymlink, ""},
		{"rename into a link", func(d *beneath.Dir) error { return d.Rename("d", "abs/d") }, beneath.ErrSymlink, ""},
		{"rename out of a link", func(d *beneath.Dir) error { return d.Rename("abs/keep", "stolen") }, beneath.ErrSymlink, ""},
		{"removeall through a link", func(d *beneath.Dir) error { return d.RemoveAll("abs/keep") }, beneath.ErrSymlink, ""},
		{"removeall through up", func(d *beneath.Dir) error { return d.RemoveAll("up/outside/keep") }, beneath.ErrSymlink, ""},
		{"dotdot name", func(d *beneath.Dir) error { return d.MkdirAll("../outside/new", 0o755) }, beneath.ErrOutside, ""},
		{"absolute name", func(d *beneath.Dir) error { _, err := d.Create("/tmp/beneath-escape", 0o644); return err }, beneath.ErrOutside, ""},
		{"removeall of the root", func(d *beneath.Dir) error { return d.RemoveAll(".") }, beneath.ErrOutside, ""},
		// Removing a link removes the link, not what it points to.
		{"removeall a link", func(d *beneath.Dir) error { return d.RemoveAll("abs") }, nil, "chain d d/x rel up"},
		{"removeall a tree holding a link", func(d *beneath.Dir) error { return d.RemoveAll("d") }, nil, "abs chain rel up"},
		{"rename a link", func(d *beneath.Dir) error { return d.Rename("abs", "d/moved") }, nil, "chain d d/moved d/x rel up"},
	}
	for _, walk := range []bool{false, true} {
		for _, o := range ops {
			t.Run(map[bool]string{false: "openat2/", true: "walk/"}[walk]+o.name, func(t *testing.T) {
				root, outside := setup(t)
				before := snapshot(t, outside)
				d, err := beneath.Open(root)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				if walk {
					beneath.ForceWalk(d)
				} else if !beneath.UsesOpenat2(d) && runtime.GOOS == "linux" {
					t.Log("openat2 unavailable here: both runs use the walk")
				}
				err = o.do(d)
				switch {
				case o.errIs == nil && err != nil:
					t.Fatalf("unexpected error: %v", err)
				case o.errIs != nil && !errors.Is(err, o.errIs):
					t.Fatalf("error %v, want %v", err, o.errIs)
				}
				if after := snapshot(t, outside); after != before {
					t.Fatalf("outside changed:\n%s\nwas:\n%s", after, before)
				}
				if o.rootGot != "" {
					var got []string
					filepath.WalkDir(root, func(p string, _ fs.DirEntry, _ error) error {
						if rel, _ := filepath.Rel(root, p); rel != "." {
							got = append(got, filepath.ToSlash(rel))
						}
						return nil
					})
					if strings.Join(got, " ") != o.rootGot {
						t.Fatalf("root holds %v, want %s", got, o.rootGot)
					}
				}
			})
		}
	}
	if _, err := os.Lstat("/tmp/beneath-escape"); err == nil {
		t.Error("an absolute name was created")
	}
}

// TestOrdinaryUse: the operations do what their os counterparts do on
// a tree without links: files, directories, symlinks (created, kept as
// links), read-only directories removed.
func TestOrdinaryUse(t *testing.T) {
	for _, walk := range []bool{false, true} {
		root := t.TempDir()
		d, err := beneath.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		if walk {
			beneath.ForceWalk(d)
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(d.MkdirAll("a/b/c", 0o755))
		must(d.MkdirAll("a/b/c", 0o755)) // existing: fine
		f, err := d.Create("a/b/c/file", 0o600)
		must(err)
		_, err = f.WriteString("hello")
		must(err)
		must(f.Close())
		if _, err := d.Create("a/b/c/file", 0o600); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("create over an existing file: %v", err)
		}
		r, err := d.Open("a/b/c/file")
		must(err)
		buf := make([]byte, 5)
		_, err = r.Read(buf)
		must(err)
		r.Close()
		if string(buf) != "hello" {
			t.Fatalf("read %q", buf)
		}
		must(d.Symlink("c/file", "a/b/link"))
		if target, err := os.Readlink(filepath.Join(root, "a/b/link")); err != nil || target != "c/file" {
			t.Fatalf("symlink: %q %v", target, err)
		}
		for name, want := range map[string]bool{"a/b/link": true, "a/b/c/file": true, "a/none": false, "none/x": false} {
			if got, err := d.Exists(name); err != nil || got != want {
				t.Fatalf("Exists(%s) = %v, %v", name, got, err)
			}
		}
		must(d.ChmodDir("a/b/c", 0o500))
		must(d.Mkdir("z", 0o755))
		must(d.Rename("a", "z/a"))
		must(d.RemoveAll("z"))
		must(d.RemoveAll("z")) // missing: fine
		if entries, _ := os.ReadDir(root); len(entries) != 0 {
			t.Fatalf("left behind: %v", entries)
		}
		d.Close()
	}
}
