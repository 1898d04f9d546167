package pool_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
)

const fixtures = "../testdata/harbor-examples"

func fixtureBlob(t *testing.T, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.EncodeDir(&buf, filepath.Join(fixtures, name)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnpackHostileRows: unsafe path values and hostile bundles are
// reported per row and nothing lands outside the destination.
func TestUnpackHostileRows(t *testing.T) {
	root := t.TempDir()
	ds := filepath.Join(root, "pool.parquet")
	w, err := pool.Create(ds, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := fixtureBlob(t, "hello-user")
	rows := []struct {
		path string
		blob []byte
	}{
		{"ok/hello-user", good},
		{"../escape", good},
		{"/abs/escape", good},
		{"a/./b", good},
		{"broken", []byte("not gzip")},
		{"ok/hello-user", good}, // same path twice: the second is refused as a duplicate
	}
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
	dest := filepath.Join(root, "dest")
	res, err := pool.Unpack(context.Background(), src, dest, pool.UnpackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, p := range res.Problems {
		reasons = append(reasons, p.Reason)
	}
	want := []string{"unsafe_path", "unsafe_path", "unsafe_path", "not_gzip", "duplicate_path"}
	if res.Written != 1 || !reflect.DeepEqual(reasons, want) {
		t.Fatalf("written %d, problems %v; want 1 and %v", res.Written, reasons, want)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 2 { // pool.parquet and dest
		t.Fatalf("something written beside dest: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(dest, "ok/hello-user/tests/test.sh")); err != nil {
		t.Fatal(err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dest, ".otcurate-unpack-*"))
	if len(leftovers) != 0 {
		t.Fatalf("staging directories left: %v", leftovers)
	}
}

// TestShardedRoundTrip writes HF-style shards and reads the folder back
// (recursively, as data/train-0000i-of-0000N.parquet) in order.
func TestShardedRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	sw, err := pool.CreateSharded(dir, 3, 10, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blob := fixtureBlob(t, "hello-world")
	var want []string
	for i := 0; i < 10; i++ {
		p := "task-" + string(rune('a'+i))
		want = append(want, p)
		if err := sw.Write(p, blob); err != nil {
			t.Fatal(err)
		}
	}
	files, err := sw.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{pool.ShardName(dir, 0, 3), pool.ShardName(dir, 1, 3), pool.ShardName(dir, 2, 3)}
	if !reflect.DeepEqual(files, wantFiles) {
		t.Fatalf("files = %v, want %v", files, wantFiles)
	}
	src, err := pool.Open(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var idx []int64
	src.Each(context.Background(), nil, func(r pool.Record) error {
		got = append(got, r.Path)
		idx = append(idx, r.Index)
		return nil
	})
	if !reflect.DeepEqual(got, want) || idx[9] != 9 {
		t.Fatalf("read %v (indexes %v)", got, idx)
	}
	// A glob names the same shards.
	g, err := pool.Open(filepath.Join(dir, "train-*.parquet"))
	if err != nil || g.Len() != 10 {
		t.Fatalf("glob: %v, %d rows", err, g.Len())
	}
}

// TestPackDeterministic: packing the fixtures twice gives identical files.
func TestPackDeterministic(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	for _, out := range []string{a, b} {
		res, err := pool.Pack(context.Background(), []string{fixtures}, out)
		if err != nil || res.Written != 5 {
			t.Fatalf("pack: %v (%+v)", err, res)
		}
	}
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	if !bytes.Equal(da, db) {
		t.Fatal("packing the same tasks twice gave different files")
	}
}
