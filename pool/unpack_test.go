package pool_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/pool"
)

// tarMember is a raw tar member for hostile bundles.
type tarMember struct {
	name, data, link string
	typ              byte
}

func hostileBlob(t *testing.T, extra ...tarMember) []byte {
	t.Helper()
	ms := append([]tarMember{
		{name: "instruction.md", data: "Say hi\n"},
		{name: "task.toml", data: "version = \"1.0\"\n"},
		{name: "environment/Dockerfile", data: "FROM ubuntu:24.04\n"},
		{name: "tests/test.sh", data: "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"},
	}, extra...)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, m := range ms {
		hdr := &tar.Header{Name: m.name, Typeflag: m.typ, Mode: 0o755, Linkname: m.link, Format: tar.FormatPAX}
		if m.typ == 0 {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(m.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(m.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func link(name, target string) tarMember {
	return tarMember{name: name, link: target, typ: tar.TypeSymlink}
}

// listTree lists a tree (type, mode, link target or content per path),
// for checking that a sentinel tree outside the target did not change.
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := rel + " " + info.Mode().String()
		if info.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			line += " -> " + target
		} else if info.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			line += " " + string(data)
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestUnpackRedTeam: the attacks of issue 21 and variants, each against
// a destination that sits next to a sentinel tree. Every one must end
// with the sentinel tree untouched, nothing beside the destination, no
// staging directory left, and the refused rows named with a clear reason.
func TestUnpackRedTeam(t *testing.T) {
	type row struct {
		path string
		blob []byte
	}
	chain := strings.Repeat("s/", 10) + strings.TrimSuffix(strings.Repeat("../", 10), "/")
	cases := []struct {
		name      string
		plant     func(t *testing.T, dest, outside string) // state of dest before the unpack
		rows      func(outside string) []row
		overwrite bool
		reasons   []string // per refused row, in pool order
		written   int64
	}{
		{
			// The attack as reported: s -> . and a chain that is "/" on
			// disk, then a row nested under it aimed at the sentinel.
			name: "issue 21 attack",
			rows: func(outside string) []row {
				return []row{
					{"lexical", hostileBlob(t, link("s", "."), link("esc", chain))},
					{"lexical/esc" + outside + "/keep", hostileBlob(t)},
				}
			},
			overwrite: true,
			reasons:   []string{"link_escapes_tree", "nested_path"},
		},
		{
			name: "deeper chain",
			rows: func(string) []row {
				return []row{{"t", hostileBlob(t, link("s", "."), link("esc", strings.Repeat("s/", 30)+strings.Repeat("../", 31)+"tmp"))}}
			},
			reasons: []string{"link_escapes_tree"},
		},
		{
			name:    "absolute target",
			rows:    func(outside string) []row { return []row{{"t", hostileBlob(t, link("tests/out", outside))}} },
			reasons: []string{"link_escapes_tree"},
		},
		{
			name: "dotdot through a link to a directory",
			rows: func(string) []row {
				return []row{{"t", hostileBlob(t, link("environment/up", ".."), link("x", "environment/up/.."))}}
			},
			reasons: []string{"link_escapes_tree"},
		},
		{
			name: "links to links",
			rows: func(string) []row {
				return []row{{"t", hostileBlob(t, link("environment/up", ".."), link("a", "b"), link("b", "environment/up/../.."))}}
			},
			reasons: []string{"link_escapes_tree"},
		},
		{
			name: "member through a link",
			rows: func(string) []row {
				return []row{{"t", hostileBlob(t, link("l", "tests"), tarMember{name: "l/x", data: "x"})}}
			},
			reasons: []string{"unsafe_member_path"},
		},
		{
			// An honest first row with an inside link to its root: the
			// nested second row is refused, the first unpacked.
			name: "nested second row",
			rows: func(string) []row {
				return []row{{"a", hostileBlob(t, link("s", "."))}, {"a/s/b", hostileBlob(t)}, {"c", hostileBlob(t)}, {"c/d", hostileBlob(t)}}
			},
			reasons: []string{"nested_path", "nested_path"},
			written: 2,
		},
		{
			// A row named like a staging directory is a task like any
			// other: the next row's staging must not replace it.
			name: "row named like a staging directory",
			rows: func(string) []row {
				return []row{{".otcurate-unpack-1.tmp", hostileBlob(t)}, {"b", hostileBlob(t)}}
			},
			written: 2,
		},
		{
			name: "row holding an earlier row",
			rows: func(string) []row {
				return []row{{"a/b", hostileBlob(t)}, {"a", hostileBlob(t)}}
			},
			reasons: []string{"nested_path"},
			written: 1,
		},
		{
			// A tree left by an older unpack (or planted): the target's
			// parent is a symlink out. --overwrite must not follow it,
			// neither to remove nor to write.
			name: "overwrite through a planted symlink in the target's parent",
			plant: func(t *testing.T, dest, outside string) {
				if err := os.MkdirAll(filepath.Join(dest, "lexical"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, filepath.Join(dest, "lexical", "esc")); err != nil {
					t.Fatal(err)
				}
			},
			rows:      func(string) []row { return []row{{"lexical/esc/keep", hostileBlob(t)}} },
			overwrite: true,
			reasons:   []string{"target_through_symlink"},
		},
		{
			name: "overwrite through a planted relative symlink",
			plant: func(t *testing.T, dest, outside string) {
				if err := os.Symlink("../outside", filepath.Join(dest, "up")); err != nil {
					t.Fatal(err)
				}
			},
			rows:      func(string) []row { return []row{{"up/keep", hostileBlob(t)}, {"up/new", hostileBlob(t)}} },
			overwrite: true,
			reasons:   []string{"target_through_symlink", "target_through_symlink"},
		},
		{
			// The target itself is a planted link: --overwrite replaces
			// the link, and what it pointed to stays.
			name: "overwrite a planted symlink at the target",
			plant: func(t *testing.T, dest, outside string) {
				if err := os.Symlink(filepath.Join(outside, "keep"), filepath.Join(dest, "task")); err != nil {
					t.Fatal(err)
				}
			},
			rows:      func(string) []row { return []row{{"task", hostileBlob(t)}} },
			overwrite: true,
			written:   1,
		},
		{
			name: "planted symlink at the target, no overwrite",
			plant: func(t *testing.T, dest, outside string) {
				if err := os.Symlink(filepath.Join(outside, "keep"), filepath.Join(dest, "task")); err != nil {
					t.Fatal(err)
				}
			},
			rows:    func(string) []row { return []row{{"task", hostileBlob(t)}} },
			reasons: []string{"target_exists"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			outside, dest := filepath.Join(base, "outside"), filepath.Join(base, "dest")
			if err := os.MkdirAll(filepath.Join(outside, "keep"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "keep", "sentinel"), []byte("precious"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dest, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.plant != nil {
				tc.plant(t, dest, outside)
			}
			before := listTree(t, outside)
			ds := filepath.Join(t.TempDir(), "pool.parquet")
			w, err := pool.Create(ds, pool.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rows := tc.rows(outside)
			for _, r := range rows {
				if err := w.Write(r.path, r.blob); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			src, err := pool.Open(ds)
			if err != nil {
				t.Fatal(err)
			}
			res, err := pool.Unpack(context.Background(), src, dest, pool.UnpackOptions{Overwrite: tc.overwrite})
			if err != nil {
				t.Fatal(err)
			}
			var reasons []string
			for _, p := range res.Problems {
				reasons = append(reasons, p.Reason)
				if p.Detail == "" {
					t.Errorf("%s: %s without detail", p.Path, p.Reason)
				}
			}
			if res.Written != tc.written || !reflect.DeepEqual(reasons, tc.reasons) {
				t.Fatalf("written %d, problems %+v; want %d and %v", res.Written, res.Problems, tc.written, tc.reasons)
			}
			if after := listTree(t, outside); !reflect.DeepEqual(after, before) {
				t.Fatalf("the tree outside changed:\n%s\nwas:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
			}
			if entries, _ := os.ReadDir(base); len(entries) != 2 {
				t.Fatalf("something written beside dest: %v", entries)
			}
			isRow := map[string]bool{}
			for _, r := range rows {
				isRow[r.path] = true
				if res.Written == int64(len(rows)) {
					if _, err := os.Stat(filepath.Join(dest, r.path, "tests", "test.sh")); err != nil {
						t.Errorf("row %s is not in place: %v", r.path, err)
					}
				}
			}
			leftovers, _ := filepath.Glob(filepath.Join(dest, ".otcurate-unpack-*"))
			for _, l := range leftovers {
				if !isRow[filepath.Base(l)] {
					t.Fatalf("staging directory left: %s", l)
				}
			}
		})
	}
}

// TestUnpackFixturesExactly: the honest Harbor fixtures unpack to trees
// identical to their sources (content, modes, no extra entries), and an
// --overwrite unpack over them gives the same trees again.
func TestUnpackFixturesExactly(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "fixtures.parquet")
	if _, err := pool.Pack(context.Background(), []string{fixtures}, ds); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "tasks")
	for _, overwrite := range []bool{false, true} {
		src, err := pool.Open(ds)
		if err != nil {
			t.Fatal(err)
		}
		res, err := pool.Unpack(context.Background(), src, dest, pool.UnpackOptions{Overwrite: overwrite})
		if err != nil || res.Written != 5 || len(res.Problems) != 0 {
			t.Fatalf("unpack (overwrite %v): %v, %+v", overwrite, err, res)
		}
		entries, _ := os.ReadDir(fixtures)
		n := 0
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			n++
			want, got := listTree(t, filepath.Join(fixtures, e.Name())), listTree(t, filepath.Join(dest, e.Name()))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s unpacked as\n%s\nwant\n%s", e.Name(), strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		if top, _ := os.ReadDir(dest); len(top) != n {
			t.Errorf("dest holds %d entries, want %d", len(top), n)
		}
	}
}
