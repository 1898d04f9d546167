package bundle

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func symlink(name, target string) member {
	return member{name: name, typ: tar.TypeSymlink, linkname: target}
}

// chain returns n links l0 -> tests, l1 -> l0, ..., in the given order.
func chain(n int, deepestFirst bool) []member {
	var out []member
	for i := range n {
		target := "tests"
		if i > 0 {
			target = "l" + itoa(i-1)
		}
		out = append(out, symlink("l"+itoa(i), target))
	}
	if deepestFirst {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// The attack of issue 21: every target stays inside as text, and s -> .
// turns the second one into the filesystem root.
var (
	attackDeep = strings.Repeat("s/", 10) + strings.TrimSuffix(strings.Repeat("../", 10), "/")
	attack     = []member{symlink("s", "."), symlink("esc", attackDeep)}
)

// TestLinkChains: symlink targets are resolved through the bundle's other
// links as the filesystem would resolve them, so a chain that leaves the
// tree is link_escapes_tree whatever the member order, and honest links
// (to files, to directories, through other links that stay inside) pass.
func TestLinkChains(t *testing.T) {
	reverse := func(ms []member) []member {
		out := append([]member(nil), ms...)
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	cases := []struct {
		name   string
		extra  []member
		reason string // "" when the bundle is valid
		detail string // a substring of the defect's detail
	}{
		{"issue 21 attack", attack, ReasonLinkEscapesTree, `symlink esc points to "s/s/`},
		{"attack, escaping link first", reverse(attack), ReasonLinkEscapesTree, "symlink esc"},
		{"deeper chain", []member{symlink("s", "."), symlink("esc", strings.Repeat("s/", 35)+strings.Repeat("../", 36)+"etc")}, ReasonLinkEscapesTree, "symlink esc"},
		{"loop link in a subdirectory", []member{symlink("tests/s", "."), symlink("tests/esc", "s/s/../..")}, ReasonLinkEscapesTree, "symlink tests/esc"},
		{"absolute target", []member{symlink("tests/passwd", "/etc/passwd")}, ReasonLinkEscapesTree, `symlink tests/passwd points to "/etc/passwd", outside the tree`},
		{"dotdot through a link to a directory", []member{symlink("environment/up", ".."), symlink("x", "environment/up/..")}, ReasonLinkEscapesTree, "symlink x"},
		{"dotdot through a link to a deeper directory", []member{symlink("d", "tests"), symlink("tests/x", "../d/../..")}, ReasonLinkEscapesTree, "symlink tests/x"},
		{"link to a link that leaves", []member{symlink("environment/up", ".."), symlink("a", "b"), symlink("b", "environment/up/../x")}, ReasonLinkEscapesTree, `symlink a points to "b"`},
		{"final component is a link that leaves", []member{symlink("environment/up", ".."), symlink("tests/u", "../environment/up"), symlink("tests/out", "u/..")}, ReasonLinkEscapesTree, "symlink tests/out"},
		{"two-link loop", []member{symlink("a", "b"), symlink("b", "a")}, ReasonLinkEscapesTree, "nested symlinks"},
		{"self loop", []member{symlink("a", "a/x")}, ReasonLinkEscapesTree, "nested symlinks"},
		{"41-link chain, deepest first", chain(41, true), ReasonLinkEscapesTree, "more than 40"},
		{"41-link chain, in order", chain(41, false), ReasonLinkEscapesTree, "more than 40"},
		{"40-link chain", chain(40, true), "", ""},
		{"link to a file", []member{symlink("tests/run", "test.sh")}, "", ""},
		{"link to the root", []member{symlink("s", ".")}, "", ""},
		{"through a root link, inside", []member{symlink("s", "."), symlink("t", "s/s/s/tests/test.sh")}, "", ""},
		{"dotdot through a link, inside", []member{symlink("d", "environment"), symlink("tests/x", "../d/../tests/test.sh")}, "", ""},
		{"up link used inside", []member{symlink("environment/up", ".."), symlink("x", "environment/up/tests")}, "", ""},
		{"dangling inside", []member{symlink("tests/gone", "missing/file")}, "", ""},
	}
	for _, tc := range cases {
		for _, whole := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/whole", false: "/streaming"}[whole], func(t *testing.T) {
				blob := rawTarGz(t, with(validMembers(), tc.extra...)...)
				b, err := scan(blob, Limits{}, DefaultRetain(), whole)
				if err == nil {
					_, err = Validate(b)
				}
				if tc.reason == "" {
					if err != nil {
						t.Fatalf("honest bundle rejected: %v", err)
					}
					return
				}
				d, ok := AsDefect(err)
				if !ok || d.Reason != tc.reason {
					t.Fatalf("got %v, want %s", err, tc.reason)
				}
				if !strings.Contains(d.Detail, tc.detail) {
					t.Errorf("detail %q does not mention %q", d.Detail, tc.detail)
				}
			})
		}
	}
}

// TestLinkChecksKeepDetails: the text checks run first, so bundles they
// already refused keep their reason and detail word for word.
func TestLinkChecksKeepDetails(t *testing.T) {
	cases := []struct {
		extra  []member
		detail string
	}{
		{[]member{symlink("tests/up", "../../..")}, `symlink tests/up points to "../../..", outside the tree`},
		{[]member{symlink("tests/passwd", "/etc/passwd")}, `symlink tests/passwd points to "/etc/passwd", outside the tree`},
		{[]member{symlink("d", "tests"), {name: "d/x", data: "x"}}, "d/x passes through symlink d"},
		{[]member{symlink("s", "."), {name: "s/tests/x", data: "x"}}, "s/tests/x passes through symlink s"},
	}
	for _, tc := range cases {
		_, err := Scan(rawTarGz(t, with(validMembers(), tc.extra...)...), Limits{}, DefaultRetain())
		if d, ok := AsDefect(err); !ok || d.Detail != tc.detail {
			t.Errorf("got %v, want detail %q", err, tc.detail)
		}
	}
}

// TestPackRefusesLinkChains: pack applies the same resolution, so it never
// writes a row validate would refuse.
func TestPackRefusesLinkChains(t *testing.T) {
	src := copyTree(t, filepath.Join(fixtures, "hello-world"))
	if err := os.Symlink(".", filepath.Join(src, "s")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(attackDeep, filepath.Join(src, "esc")); err != nil {
		t.Fatal(err)
	}
	err := EncodeDir(&bytes.Buffer{}, src)
	if d, ok := AsDefect(err); !ok || d.Reason != ReasonLinkEscapesTree {
		t.Fatalf("got %v, want %s", err, ReasonLinkEscapesTree)
	}
	if err := os.Remove(filepath.Join(src, "esc")); err != nil {
		t.Fatal(err)
	}
	if err := EncodeDir(&bytes.Buffer{}, src); err != nil {
		t.Fatalf("an inside link to the root is refused: %v", err)
	}
}

// TestExtractRefusesLinkChains: the attack bundle extracts nothing, and
// nothing appears outside the destination.
func TestExtractRefusesLinkChains(t *testing.T) {
	root := t.TempDir()
	dest := filepath.Join(root, "dest")
	err := Extract(bytes.NewReader(rawTarGz(t, with(validMembers(), attack...)...)), dest, Limits{})
	if d, ok := AsDefect(err); !ok || d.Reason != ReasonLinkEscapesTree {
		t.Fatalf("got %v, want %s", err, ReasonLinkEscapesTree)
	}
	if _, err := os.Lstat(dest); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("partial tree left in %s", dest)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("something was written next to dest: %v", entries)
	}
}

// BenchmarkScanTaskWithLinks is BenchmarkScanSmallTask's task plus four
// symlinks (one through another): what resolving links costs the bundles
// that have them. Bundles without links skip it entirely.
func BenchmarkScanTaskWithLinks(b *testing.B) {
	var buf bytes.Buffer
	Encode(&buf, []Entry{
		{Name: "instruction.md", Kind: KindFile, Mode: 0o644, Data: bytes.Repeat([]byte("Implement the function. "), 40)},
		{Name: "task.toml", Kind: KindFile, Mode: 0o644, Data: []byte("schema_version = \"1.1\"\n")},
		{Name: "environment/Dockerfile", Kind: KindFile, Mode: 0o644, Data: []byte("FROM python:3.11-slim\nRUN pip install pytest\n")},
		{Name: "environment/app/data", Kind: KindSymlink, Linkname: "../../tests/data"},
		{Name: "environment/app/run", Kind: KindSymlink, Linkname: "data/../test.sh"},
		{Name: "tests/data", Kind: KindSymlink, Linkname: "fixtures"},
		{Name: "tests/fixtures/a.txt", Kind: KindFile, Mode: 0o644, Data: []byte("a\n")},
		{Name: "tests/latest", Kind: KindSymlink, Linkname: "fixtures/a.txt"},
		{Name: "tests/test.sh", Kind: KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")},
	})
	blob := buf.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(blob)))
	for i := 0; i < b.N; i++ {
		bb, err := Scan(blob, Limits{}, DefaultRetain())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Validate(bb); err != nil {
			b.Fatal(err)
		}
	}
}
