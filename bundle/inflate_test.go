package bundle

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
)

// TestInflateWhole: the one-call inflater accepts exactly the blobs that
// are one valid gzip member within the limits, and yields what the
// streaming gzip reader yields.
func TestInflateWhole(t *testing.T) {
	valid := rawTarGz(t, validMembers()...)
	content, err := io.ReadAll(mustGunzip(t, valid))
	if err != nil {
		t.Fatal(err)
	}
	big := gz(t, make([]byte, maxWholeInflate+1))
	vs := gzipVariants(t, valid)
	type inflateCase struct {
		name string
		blob []byte
		max  int64
		want bool // accepted, in a build that has the one-call inflater
	}
	cases := []inflateCase{
		{"valid", valid, 1 << 20, true},
		{"valid at the limit", valid, int64(len(content)), true},
		{"over the size limit", valid, int64(len(content)) - 1, false},
		{"over maxWholeInflate", big, 1 << 30, false},
		{"truncated", valid[:len(valid)-1], 1 << 20, false},
		{"too short", valid[:12], 1 << 20, false},
		{"not gzip", []byte("plain text that is certainly not a gzip stream"), 1 << 20, false},
		{"name comment extra", vs["name comment extra"], 1 << 20, true},
	}
	for _, name := range []string{"bad header crc", "two members", "trailing garbage", "trailing zeros", "isize too large", "isize off by one", "second member broken"} {
		cases = append(cases, inflateCase{name, vs[name], 1 << 20, false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, buf, ok := inflateWhole(tc.blob, tc.max)
			if want := tc.want && wholeInflateAvailable; ok != want {
				t.Fatalf("accepted = %v, want %v", ok, want)
			}
			if !ok {
				return
			}
			defer inflateBufs.Put(buf)
			if !bytes.Equal(raw, content) {
				t.Fatalf("inflated %d bytes that differ from the streaming reader's %d", len(raw), len(content))
			}
		})
	}
}

// TestInflateWholeFixtures: every Harbor example, packed, inflates in one
// call to the streaming reader's bytes.
func TestInflateWholeFixtures(t *testing.T) {
	if !wholeInflateAvailable {
		t.Skip("pure-Go build: no one-call inflater")
	}
	dirs, _ := filepath.Glob(filepath.Join(fixtures, "*", "instruction.md"))
	if len(dirs) == 0 {
		t.Fatal("no fixtures")
	}
	for _, d := range dirs {
		var blob bytes.Buffer
		if err := EncodeDir(&blob, filepath.Dir(d)); err != nil {
			t.Fatal(err)
		}
		want, err := io.ReadAll(mustGunzip(t, blob.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		raw, buf, ok := inflateWhole(blob.Bytes(), DefaultLimits().MaxTotalBytes)
		if !ok || !bytes.Equal(raw, want) {
			t.Fatalf("%s: accepted %v, equal %v", d, ok, bytes.Equal(raw, want))
		}
		inflateBufs.Put(buf)
	}
}

// FuzzInflateWhole: whatever the one-call inflater accepts, the streaming
// gzip reader reads to the same bytes without error.
func FuzzInflateWhole(f *testing.F) {
	valid := rawTarGz(f, validMembers()...)
	f.Add(valid)
	for _, b := range gzipVariants(f, valid) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, blob []byte) {
		raw, buf, ok := inflateWhole(blob, 1<<20)
		if !ok {
			return
		}
		defer inflateBufs.Put(buf)
		r, err := kgzip.NewReader(bytes.NewReader(blob))
		if err != nil {
			t.Fatalf("accepted, but the streaming reader refuses the header: %v", err)
		}
		want, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("accepted, but the streaming reader fails: %v", err)
		}
		if !bytes.Equal(raw, want) {
			t.Fatalf("accepted %d bytes, the streaming reader reads %d", len(raw), len(want))
		}
	})
}
