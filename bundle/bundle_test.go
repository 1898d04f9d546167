package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const fixtures = "../testdata/harbor-examples"

// member is a raw tar member for hand-built (possibly hostile) archives.
type member struct {
	name     string
	typ      byte
	mode     int64
	data     string
	linkname string
	size     int64 // overrides len(data) when > 0 (content is zeros)
}

// rawTarGz builds an archive without any of Encode's safety.
func rawTarGz(t testing.TB, members ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, m := range members {
		typ := m.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := m.mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: m.name, Typeflag: typ, Mode: mode, Linkname: m.linkname, ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(m.data))
			if m.size > 0 {
				hdr.Size = m.size
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if m.size > 0 {
				if _, err := io.CopyN(tw, zeroReader{}, m.size); err != nil {
					t.Fatal(err)
				}
			} else if _, err := tw.Write([]byte(m.data)); err != nil {
				t.Fatal(err)
			}
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

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func gz(t testing.TB, data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(data)
	w.Close()
	return buf.Bytes()
}

// validMembers is a minimal valid task.
func validMembers() []member {
	return []member{
		{name: "instruction.md", data: "Write hello to /app/out.txt\n"},
		{name: "task.toml", data: "version = \"1.0\"\n[verifier]\ntimeout_sec = 60\n"},
		{name: "environment/", typ: tar.TypeDir, mode: 0o755},
		{name: "environment/Dockerfile", data: "FROM ubuntu:24.04\n"},
		{name: "tests/test.sh", mode: 0o755, data: "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"},
		{name: "solution/solve.sh", mode: 0o755, data: "#!/bin/bash\necho hello > /app/out.txt\n"},
	}
}

// multiStepMembers is a two-step task in Harbor's multi-step layout.
func multiStepMembers() []member {
	ms := without(without(without(validMembers(), "instruction.md"), "tests/"), "solution/")
	ms = replace(ms, "task.toml", "version = \"2.0\"\n[environment]\nallow_internet = false\n\n[[steps]]\nname = \"milestone_1\"\n\n[steps.verifier]\ntimeout_sec = 60.0\n\n[[steps]]\nname = \"milestone_2\"\n")
	for _, step := range []string{"milestone_1", "milestone_2"} {
		ms = with(ms,
			member{name: "steps/" + step + "/instruction.md", data: "Do " + step + "\n"},
			member{name: "steps/" + step + "/tests/test.sh", mode: 0o755, data: "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"})
	}
	return ms
}

// TestMultiStepDetail: the defect names each step, and says otcurate does
// not run such tasks, so a reader of decisions.jsonl knows why.
func TestMultiStepDetail(t *testing.T) {
	b, err := Scan(rawTarGz(t, multiStepMembers()...), Limits{}, DefaultRetain())
	if err != nil {
		t.Fatal(err)
	}
	_, err = Validate(b)
	d, ok := AsDefect(err)
	if !ok || d.Reason != ReasonUnsupportedTaskKind {
		t.Fatalf("got %v, want %s", err, ReasonUnsupportedTaskKind)
	}
	for _, want := range []string{"2 [[steps]]", "milestone_1", "milestone_2", "does not run multi-step tasks"} {
		if !strings.Contains(d.Detail, want) {
			t.Errorf("detail %q lacks %q", d.Detail, want)
		}
	}
}

func without(ms []member, name string) []member {
	var out []member
	for _, m := range ms {
		if m.name != name && !strings.HasPrefix(m.name, name) {
			out = append(out, m)
		}
	}
	return out
}

func with(ms []member, extra ...member) []member {
	return append(append([]member(nil), ms...), extra...)
}

func replace(ms []member, name, data string) []member {
	out := append([]member(nil), ms...)
	for i := range out {
		if out[i].name == name {
			out[i].data = data
		}
	}
	return out
}

// TestBadInput checks that each kind of broken bundle is rejected with its
// own reason code.
func TestBadInput(t *testing.T) {
	valid := rawTarGz(t, validMembers()...)
	corrupt := bytes.Clone(valid)
	corrupt[len(corrupt)-6] ^= 0xff // CRC32 in the gzip trailer
	small := Limits{MaxTotalBytes: 8 << 20, MaxMembers: 100, MaxFileBytes: 1 << 20}
	cases := []struct {
		name   string
		blob   []byte
		lim    Limits
		reason string
	}{
		{"empty blob", nil, Limits{}, ReasonEmptyBlob},
		{"not gzip", []byte("this is plain text, not a task"), Limits{}, ReasonNotGzip},
		{"uncompressed tar", func() []byte { b, _ := io.ReadAll(mustGunzip(t, valid)); return b }(), Limits{}, ReasonNotGzip},
		{"truncated gzip", valid[:len(valid)/2], Limits{}, ReasonTruncatedGzip},
		{"truncated gzip header", valid[:5], Limits{}, ReasonTruncatedGzip},
		{"corrupt gzip", corrupt, Limits{}, ReasonCorruptGzip},
		{"gzip header crc", gzipVariants(t, valid)["bad header crc"], Limits{}, ReasonCorruptGzip},
		{"second gzip member truncated", gzipVariants(t, valid)["second member broken"], Limits{}, ReasonTruncatedGzip},
		{"gzip size mismatch", gzipVariants(t, valid)["isize off by one"], Limits{}, ReasonCorruptGzip},
		{"not tar", gz(t, bytes.Repeat([]byte("not a tar archive "), 100)), Limits{}, ReasonNotTar},
		{"absolute member", rawTarGz(t, with(validMembers(), member{name: "/etc/cron.d/x", data: "x"})...), Limits{}, ReasonUnsafeMemberPath},
		{"dotdot member", rawTarGz(t, with(validMembers(), member{name: "tests/../../evil", data: "x"})...), Limits{}, ReasonUnsafeMemberPath},
		{"symlink absolute", rawTarGz(t, with(validMembers(), member{name: "tests/passwd", typ: tar.TypeSymlink, linkname: "/etc/passwd"})...), Limits{}, ReasonLinkEscapesTree},
		{"symlink relative escape", rawTarGz(t, with(validMembers(), member{name: "tests/up", typ: tar.TypeSymlink, linkname: "../../.."})...), Limits{}, ReasonLinkEscapesTree},
		{"hardlink escape", rawTarGz(t, with(validMembers(), member{name: "tests/h", typ: tar.TypeLink, linkname: "../etc/passwd"})...), Limits{}, ReasonLinkEscapesTree},
		{"write through symlink", rawTarGz(t, with(validMembers(), member{name: "d", typ: tar.TypeSymlink, linkname: "tests"}, member{name: "d/x", data: "x"})...), Limits{}, ReasonUnsafeMemberPath},
		{"char device", rawTarGz(t, with(validMembers(), member{name: "environment/null", typ: tar.TypeChar})...), Limits{}, ReasonSpecialFile},
		{"block device", rawTarGz(t, with(validMembers(), member{name: "environment/sda", typ: tar.TypeBlock})...), Limits{}, ReasonSpecialFile},
		{"fifo", rawTarGz(t, with(validMembers(), member{name: "environment/pipe", typ: tar.TypeFifo})...), Limits{}, ReasonSpecialFile},
		{"gzip bomb", rawTarGz(t, with(validMembers(), member{name: "environment/zeros", size: 64 << 20})...), Limits{MaxTotalBytes: 8 << 20, MaxMembers: 100, MaxFileBytes: 1 << 30}, ReasonUncompressedTooBig},
		{"file too large", rawTarGz(t, with(validMembers(), member{name: "environment/big", size: 2 << 20})...), small, ReasonFileTooLarge},
		{"too many members", rawTarGz(t, with(validMembers(), manyMembers(120)...)...), small, ReasonTooManyMembers},
		{"duplicate member", rawTarGz(t, with(validMembers(), member{name: "instruction.md", data: "again"})...), Limits{}, ReasonDuplicateMember},
		{"missing instruction", rawTarGz(t, without(validMembers(), "instruction.md")...), Limits{}, ReasonMissingInstruction},
		{"empty instruction", rawTarGz(t, replace(validMembers(), "instruction.md", "  \n")...), Limits{}, ReasonEmptyInstruction},
		{"missing task.toml", rawTarGz(t, without(validMembers(), "task.toml")...), Limits{}, ReasonMissingTaskToml},
		{"missing environment", rawTarGz(t, without(validMembers(), "environment/")...), Limits{}, ReasonMissingEnvironment},
		{"environment without Dockerfile", rawTarGz(t, with(without(validMembers(), "environment/"), member{name: "environment/seed.txt", data: "x"})...), Limits{}, ReasonMissingEnvDef},
		{"missing tests/test.sh", rawTarGz(t, without(validMembers(), "tests/")...), Limits{}, ReasonMissingTestScript},
		{"invalid toml syntax", rawTarGz(t, replace(validMembers(), "task.toml", "[verifier\ntimeout_sec = 1")...), Limits{}, ReasonInvalidTaskToml},
		{"invalid toml types", rawTarGz(t, replace(validMembers(), "task.toml", "[verifier]\ntimeout_sec = \"ten\"\n")...), Limits{}, ReasonInvalidTaskToml},
		{"multi-step", rawTarGz(t, replace(validMembers(), "task.toml", "[[steps]]\nname = \"a\"\n")...), Limits{}, ReasonUnsupportedTaskKind},
		// Harbor's multi-step layout has no root instruction.md or tests/:
		// it is named for what it is, not for what it lacks.
		{"multi-step without root instruction", rawTarGz(t, multiStepMembers()...), Limits{}, ReasonUnsupportedTaskKind},
		// Without [[steps]] a broken task.toml still comes after a missing
		// instruction.
		{"missing instruction and invalid toml", rawTarGz(t, replace(without(validMembers(), "instruction.md"), "task.toml", "[verifier\n")...), Limits{}, ReasonMissingInstruction},
	}
	// Each case through both inflaters: the one-call path (where the build
	// has it) must never change a verdict or its wording.
	for _, tc := range cases {
		for _, whole := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/whole", false: "/streaming"}[whole], func(t *testing.T) {
				b, err := scan(tc.blob, tc.lim, DefaultRetain(), whole)
				if err == nil {
					_, err = Validate(b)
				}
				d, ok := AsDefect(err)
				if !ok {
					t.Fatalf("got %v, want a defect with reason %s", err, tc.reason)
				}
				if d.Reason != tc.reason {
					t.Fatalf("reason = %s (%s), want %s", d.Reason, d.Detail, tc.reason)
				}
				if d.Detail == "" {
					t.Errorf("defect %s has no detail", d.Reason)
				}
				if whole {
					_, serr := scan(tc.blob, tc.lim, DefaultRetain(), false)
					if serr == nil {
						_, serr = Validate(b)
					}
					if sd, _ := AsDefect(serr); sd == nil || sd.Detail != d.Detail {
						t.Errorf("whole-blob detail %q, streaming %v", d.Detail, serr)
					}
				}
			})
		}
	}
}

// gzipVariants returns valid re-encodings of a gzip blob's content and
// defective ones the one-call inflater must hand back to the streaming
// one: a header CRC, a second member, trailing bytes, a wrong ISIZE.
func gzipVariants(t testing.TB, valid []byte) map[string][]byte {
	t.Helper()
	content, err := io.ReadAll(mustGunzip(t, valid))
	if err != nil {
		t.Fatal(err)
	}
	withName := func() []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Name, w.Comment, w.Extra = "task.tar", "a comment", []byte("AB\x02\x00xy")
		w.Write(content)
		w.Close()
		return buf.Bytes()
	}()
	fhcrc := bytes.Clone(valid) // FHCRC set, header CRC16 inserted after the 10-byte header
	fhcrc[3] |= 0x02
	fhcrc = append(append(fhcrc[:10:10], 0xde, 0xad), valid[10:]...)
	half := len(content) / 2
	twoMembers := append(gz(t, content[:half]), gz(t, content[half:])...)
	badSize := bytes.Clone(valid)
	badSize[len(badSize)-1] ^= 0x01 // ISIZE's top byte: claims 16 MB more
	smallSize := bytes.Clone(valid)
	smallSize[len(smallSize)-4] ^= 0x01 // ISIZE off by one
	return map[string][]byte{
		"name comment extra":   withName,
		"bad header crc":       fhcrc,
		"two members":          twoMembers,
		"trailing garbage":     append(bytes.Clone(valid), "junk"...),
		"trailing zeros":       append(bytes.Clone(valid), 0, 0, 0, 0),
		"isize too large":      badSize,
		"isize off by one":     smallSize,
		"second member broken": append(bytes.Clone(valid), valid[:len(valid)/2]...),
	}
}

// TestGzipVariantsAgree: blobs that are valid or broken at the gzip layer
// get the same verdict, detail and content hash from both inflaters.
func TestGzipVariantsAgree(t *testing.T) {
	valid := rawTarGz(t, validMembers()...)
	for name, blob := range gzipVariants(t, valid) {
		t.Run(name, func(t *testing.T) {
			wb, werr := scan(blob, Limits{}, DefaultRetain(), true)
			sb, serr := scan(blob, Limits{}, DefaultRetain(), false)
			if (werr == nil) != (serr == nil) || (werr != nil && werr.Error() != serr.Error()) {
				t.Fatalf("whole: %v; streaming: %v", werr, serr)
			}
			if werr == nil && wb.ContentHash != sb.ContentHash {
				t.Fatalf("content hash whole %s, streaming %s", wb.ContentHash, sb.ContentHash)
			}
		})
	}
}

func manyMembers(n int) []member {
	var ms []member
	for i := 0; i < n; i++ {
		ms = append(ms, member{name: "environment/f" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i), data: "."})
	}
	return ms
}

func itoa(i int) string { return strconv.Itoa(i) }

func mustGunzip(t testing.TB, b []byte) io.Reader {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestValidBundle(t *testing.T) {
	b, err := Scan(rawTarGz(t, validMembers()...), Limits{}, DefaultRetain())
	if err != nil {
		t.Fatal(err)
	}
	info, err := Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if info.EnvKind != "dockerfile" || !info.HasSolution || info.TestScript != "tests/test.sh" {
		t.Fatalf("info = %+v", info)
	}
	if info.Config.Verifier.TimeoutSec != 60 || info.Config.Agent.TimeoutSec != DefaultAgentTimeoutSec {
		t.Fatalf("timeouts = %v / %v", info.Config.Verifier.TimeoutSec, info.Config.Agent.TimeoutSec)
	}
}

// TestScanIndexesEachMemberOnce: a directory listed twice, files, a hard
// link and a symlink each appear once in Names and Files, sorted, with the
// link's content taken from its target.
func TestScanIndexesEachMemberOnce(t *testing.T) {
	b, err := Scan(rawTarGz(t,
		member{name: "tests/", typ: tar.TypeDir, mode: 0o755},
		member{name: "tests/test.sh", data: "#!/bin/sh\n", mode: 0o755},
		member{name: "tests/", typ: tar.TypeDir, mode: 0o755},
		member{name: "a.txt", data: "alpha"},
		member{name: "tests/copy.sh", typ: tar.TypeLink, linkname: "tests/test.sh"},
		member{name: "link", typ: tar.TypeSymlink, linkname: "a.txt"},
	), Limits{}, DefaultRetain())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.txt", "link", "tests", "tests/copy.sh", "tests/test.sh"}
	if !slices.Equal(b.Names, want) || len(b.Files) != len(want) {
		t.Fatalf("Names = %q (%d files), want %q", b.Names, len(b.Files), want)
	}
	for _, name := range want {
		if f := b.Files[name]; f == nil || f.Name != name {
			t.Fatalf("Files[%q] = %+v", name, f)
		}
	}
	cp, orig := b.Files["tests/copy.sh"], b.Files["tests/test.sh"]
	if cp.Digest != orig.Digest || string(cp.Data) != "#!/bin/sh\n" || cp.Mode != orig.Mode || cp.Kind != KindHardlink {
		t.Fatalf("hard link = %+v, target = %+v", cp, orig)
	}
	if data, ok := b.Data("a.txt"); !ok || string(data) != "alpha" {
		t.Fatalf("Data(a.txt) = %q, %v", data, ok)
	}
}

// TestGzipBombDefaultLimits inflates a real bomb (600 MiB of zeros, about
// 600 KB compressed) under the default limits: it must stop at the limit,
// without buffering the content.
func TestGzipBombDefaultLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("inflates 512 MiB")
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "instruction.md", Mode: 0o644, Size: 600 << 20, Typeflag: tar.TypeReg})
	io.CopyN(tw, zeroReader{}, 600<<20)
	tw.Close()
	zw.Close()
	if buf.Len() > 2<<20 {
		t.Fatalf("bomb is %d bytes compressed", buf.Len())
	}
	lim := DefaultLimits()
	lim.MaxFileBytes = 1 << 30 // let the total limit be the one that trips
	_, err := Scan(buf.Bytes(), lim, DefaultRetain())
	if d, ok := AsDefect(err); !ok || d.Reason != ReasonUncompressedTooBig {
		t.Fatalf("got %v, want %s", err, ReasonUncompressedTooBig)
	}
}

// TestEncodeDeterministic packs the same tree twice, in two copies with
// different mtimes, and expects the same bytes.
func TestEncodeDeterministic(t *testing.T) {
	a := copyTree(t, filepath.Join(fixtures, "hello-user"))
	time.Sleep(10 * time.Millisecond)
	b := copyTree(t, filepath.Join(fixtures, "hello-user"))
	os.Chtimes(filepath.Join(b, "instruction.md"), time.Unix(1, 0), time.Unix(1, 0))
	var ba, bb bytes.Buffer
	if err := EncodeDir(&ba, a); err != nil {
		t.Fatal(err)
	}
	if err := EncodeDir(&bb, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ba.Bytes(), bb.Bytes()) {
		t.Fatal("same task packed to different bytes")
	}
	// Reference-packer layout: relative names, explicit directories, modes kept.
	var names []string
	err := Walk(bytes.NewReader(ba.Bytes()), Limits{}, func(m Member, _ io.Reader) error {
		names = append(names, m.Kind.String()+":"+m.Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "dir:environment file:environment/Dockerfile file:instruction.md dir:solution file:solution/solve.sh file:task.toml dir:tests file:tests/test.sh"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("members = %s\nwant      %s", got, want)
	}
}

// TestHashIgnoresTarMetadata: member order, times, owners and directory
// entries do not change the content hash; content and exec bits do.
func TestHashIgnoresTarMetadata(t *testing.T) {
	base := validMembers()
	h := func(ms ...member) string {
		b, err := Scan(rawTarGz(t, ms...), Limits{}, DefaultRetain())
		if err != nil {
			t.Fatal(err)
		}
		return b.ContentHash
	}
	ref := h(base...)
	reversed := make([]member, len(base))
	for i, m := range base {
		reversed[len(base)-1-i] = m
	}
	if h(reversed...) != ref {
		t.Error("member order changed the hash")
	}
	noDir := []member{}
	for _, m := range base {
		if m.typ != tar.TypeDir {
			noDir = append(noDir, m)
		}
	}
	if h(noDir...) != ref {
		t.Error("an explicit directory entry changed the hash")
	}
	var otherMode []member
	for _, m := range base {
		if m.name == "instruction.md" {
			m.mode = 0o600 // permission change that does not touch the exec bit
		}
		otherMode = append(otherMode, m)
	}
	if h(otherMode...) != ref {
		t.Error("a non-exec mode change changed the hash")
	}
	var noExec []member
	for _, m := range base {
		if m.name == "tests/test.sh" {
			m.mode = 0o644
		}
		noExec = append(noExec, m)
	}
	if h(noExec...) == ref {
		t.Error("dropping the exec bit did not change the hash")
	}
	if h(replace(base, "instruction.md", "other")...) == ref {
		t.Error("a content change did not change the hash")
	}
	if h(with(base, member{name: "empty/", typ: tar.TypeDir, mode: 0o755})...) == ref {
		t.Error("an empty directory did not change the hash")
	}
}

// TestRoundTripFixtures: pack → extract gives the same content and exec
// bits for every Harbor example, and the hash of the tree is stable.
func TestRoundTripFixtures(t *testing.T) {
	entries, err := os.ReadDir(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		src := filepath.Join(fixtures, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			var blob bytes.Buffer
			if err := EncodeDir(&blob, src); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "out")
			if err := Extract(bytes.NewReader(blob.Bytes()), dest, Limits{}); err != nil {
				t.Fatal(err)
			}
			compareTrees(t, src, dest)
			var again bytes.Buffer
			if err := EncodeDir(&again, dest); err != nil {
				t.Fatal(err)
			}
			b1, _ := Scan(blob.Bytes(), Limits{}, DefaultRetain())
			b2, _ := Scan(again.Bytes(), Limits{}, DefaultRetain())
			if b1.ContentHash != b2.ContentHash {
				t.Fatal("content hash changed across a round trip")
			}
			if _, err := Validate(b1); err != nil {
				t.Fatalf("fixture does not validate: %v", err)
			}
		})
	}
	if n != 5 {
		t.Fatalf("found %d fixtures, want 5", n)
	}
}

func compareTrees(t *testing.T, a, b string) {
	t.Helper()
	seen := 0
	filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(a, p)
		other := filepath.Join(b, rel)
		ia, _ := os.Lstat(p)
		ib, err := os.Lstat(other)
		if err != nil {
			t.Errorf("%s missing after round trip", rel)
			return nil
		}
		seen++
		if ia.IsDir() != ib.IsDir() {
			t.Errorf("%s: dir/file mismatch", rel)
		}
		if ia.Mode().IsRegular() {
			da, _ := os.ReadFile(p)
			db, _ := os.ReadFile(other)
			if !bytes.Equal(da, db) {
				t.Errorf("%s: content differs", rel)
			}
			if ia.Mode().Perm()&0o111 != ib.Mode().Perm()&0o111 || ia.Mode().Perm() != ib.Mode().Perm() {
				t.Errorf("%s: mode %v, want %v", rel, ib.Mode().Perm(), ia.Mode().Perm())
			}
		}
		return nil
	})
	count := 0
	filepath.WalkDir(b, func(string, fs.DirEntry, error) error { count++; return nil })
	if count != seen {
		t.Errorf("extracted tree has %d entries, source %d", count, seen)
	}
}

func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, _ := d.Info()
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm()|0o200)
	})
	if err != nil {
		t.Fatal(err)
	}
	// restore exact modes (WriteFile was given |0o200 to be able to write)
	filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(src, p)
		info, _ := d.Info()
		if !d.IsDir() {
			os.Chmod(filepath.Join(dst, rel), info.Mode().Perm())
		}
		return nil
	})
	return dst
}

// TestExtractNeverEscapes: hostile archives leave nothing outside dest
// and no partial tree inside it.
func TestExtractNeverEscapes(t *testing.T) {
	root := t.TempDir()
	hostile := [][]member{
		with(validMembers(), member{name: "../escape.txt", data: "x"}),
		with(validMembers(), member{name: "/tmp/otcurate-escape.txt", data: "x"}),
		with(validMembers(), member{name: "l", typ: tar.TypeSymlink, linkname: ".."}, member{name: "l/escape.txt", data: "x"}),
		with(validMembers(), member{name: "l", typ: tar.TypeSymlink, linkname: "/tmp"}),
		with(validMembers(), member{name: "ok", typ: tar.TypeSymlink, linkname: "tests"}, member{name: "ok/escape.txt", data: "x"}),
	}
	for i, ms := range hostile {
		dest := filepath.Join(root, "dest", itoa(i))
		err := Extract(bytes.NewReader(rawTarGz(t, ms...)), dest, Limits{})
		if _, ok := AsDefect(err); !ok {
			t.Errorf("archive %d: got %v, want a defect", i, err)
		}
		if _, err := os.Stat(dest); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("archive %d: partial tree left in %s", i, dest)
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("something was written next to dest: %v", entries)
	}
	if _, err := os.Stat("/tmp/otcurate-escape.txt"); err == nil {
		t.Error("absolute member escaped to /tmp")
	}
	// A symlink that stays inside is kept, and created as a link.
	dest := filepath.Join(root, "good")
	err := Extract(bytes.NewReader(rawTarGz(t, with(validMembers(), member{name: "tests/run", typ: tar.TypeSymlink, linkname: "test.sh"})...)), dest, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dest, "tests/run")); err != nil || target != "test.sh" {
		t.Fatalf("inside symlink: %q, %v", target, err)
	}
}

// TestContentHashGolden pins the content-hash format: changing it silently
// would invalidate every ledger and dedup decision made before.
func TestContentHashGolden(t *testing.T) {
	want := map[string]string{
		"hello-alpine": "fa8464c472671311d743d3da4cf55f00d6bc18c8c323941d48ceb5f98643d247",
		"hello-user":   "1b7a2f568f9bdbab836d4bcfd7a8c8e063c9a7b1c15555373d91a57994f3a064",
		"hello-world":  "209ecb2136a67e2f1719939560ec413fa7b28fb47577114f014fb002ea230818",
	}
	for name, hash := range want {
		var buf bytes.Buffer
		if err := EncodeDir(&buf, filepath.Join(fixtures, name)); err != nil {
			t.Fatal(err)
		}
		b, err := Scan(buf.Bytes(), Limits{}, DefaultRetain())
		if err != nil {
			t.Fatal(err)
		}
		if b.ContentHash != hash {
			t.Errorf("%s: hash %s, want %s", name, b.ContentHash, hash)
		}
	}
}
