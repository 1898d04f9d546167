package bundle

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

type tarEntry struct {
	Name, Link string
	Type       byte
	Size       int64
	Sum        [32]byte
}

// readOurs lists members with tarReader, stopping at the first member type
// the decoder would reject anyway.
func readOurs(data []byte) ([]tarEntry, error) {
	tr := newTarReader(bytes.NewReader(data))
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if !isKnownType(h.Typeflag) || h.Typeflag == '7' {
			return out, nil
		}
		c, err := io.ReadAll(tr)
		if err != nil {
			return out, err
		}
		out = append(out, tarEntry{h.Name, h.Linkname, h.Typeflag, int64(len(c)), sha256.Sum256(c)})
	}
}

func readStdlib(data []byte) ([]tarEntry, error) {
	tr := tar.NewReader(bytes.NewReader(data))
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		typ := h.Typeflag
		if typ == tar.TypeRegA || typ == tar.TypeCont {
			typ = tar.TypeReg
		}
		if typ == tar.TypeXGlobalHeader {
			continue
		}
		if typ < '0' || typ > '6' {
			return out, nil
		}
		c, err := io.ReadAll(tr)
		if err != nil {
			return out, err
		}
		out = append(out, tarEntry{h.Name, h.Linkname, typ, int64(len(c)), sha256.Sum256(c)})
	}
}

func tarSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, format := range []tar.Format{tar.FormatUSTAR, tar.FormatPAX, tar.FormatGNU} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		long := strings.Repeat("d/", 60) + "file.txt"
		items := []struct {
			name string
			typ  byte
			data string
			link string
		}{
			{"instruction.md", tar.TypeReg, "hello\n", ""},
			{"environment/", tar.TypeDir, "", ""},
			{"environment/Dockerfile", tar.TypeReg, strings.Repeat("RUN x\n", 200), ""},
			{"tests/link", tar.TypeSymlink, "", "../instruction.md"},
			{"tests/hard", tar.TypeLink, "", "instruction.md"},
			{long, tar.TypeReg, "long name", ""},
		}
		for _, it := range items {
			hdr := &tar.Header{Name: it.name, Typeflag: it.typ, Mode: 0o644, Size: int64(len(it.data)), Linkname: it.link, Format: format}
			if format == tar.FormatUSTAR && len(it.name) > 100 {
				continue
			}
			if err := tw.WriteHeader(hdr); err != nil {
				t.Fatalf("%v %s: %v", format, it.name, err)
			}
			io.WriteString(tw, it.data)
		}
		tw.Close()
		seeds = append(seeds, buf.Bytes())
	}
	return seeds
}

// TestTarReaderMatchesStdlib: on well-formed archives of every format the
// two readers list the same members.
func TestTarReaderMatchesStdlib(t *testing.T) {
	for i, data := range tarSeeds(t) {
		ours, err1 := readOurs(data)
		std, err2 := readStdlib(data)
		if err1 != nil || err2 != nil {
			t.Fatalf("seed %d: ours %v, stdlib %v", i, err1, err2)
		}
		if fmt.Sprint(ours) != fmt.Sprint(std) {
			t.Fatalf("seed %d differs:\nours   %v\nstdlib %v", i, ours, std)
		}
		if len(ours) < 5 {
			t.Fatalf("seed %d: only %d members", i, len(ours))
		}
	}
}

// FuzzTarReader checks that tarReader is never more permissive than
// archive/tar: whatever it reads without error, the stdlib reads the same.
// Run longer with: go test -fuzz FuzzTarReader ./bundle
func FuzzTarReader(f *testing.F) {
	for _, s := range tarSeeds(f) {
		f.Add(s)
		f.Add(s[:len(s)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ours, err := readOurs(data)
		if err != nil {
			return
		}
		std, err := readStdlib(data)
		if err != nil {
			t.Fatalf("tarReader accepted what archive/tar rejects (%v)\nours: %v", err, ours)
		}
		if fmt.Sprint(ours) != fmt.Sprint(std) {
			t.Fatalf("readers disagree:\nours   %v\nstdlib %v", ours, std)
		}
	})
}

func TestByteSumMatchesTheByteLoop(t *testing.T) {
	var blk [512]byte
	check := func(name string) {
		t.Helper()
		var want uint64
		for _, c := range blk {
			want += uint64(c)
		}
		if got := byteSum(&blk); got != want {
			t.Fatalf("%s: byteSum = %d, want %d", name, got, want)
		}
	}
	check("zeros")
	for i := range blk {
		blk[i] = 0xff
	}
	check("all 0xff (the largest sum)")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		for i := range blk {
			blk[i] = byte(rng.UintN(256))
		}
		check(fmt.Sprintf("random block %d", round))
	}
}
