package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
)

// TestUnpackAttackCLI replays issue 21 through the CLI: a row whose
// symlinks are "/" on disk and a second row nested under it, aimed at a
// folder beside the target. validate drops both with their reasons, and
// unpack --overwrite writes and removes nothing outside -d.
func TestUnpackAttackCLI(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	sentinel := filepath.Join(outside, "keep", "sentinel")
	if err := os.WriteFile(sentinel, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := func(extra ...bundle.Entry) []byte {
		var b bytes.Buffer
		err := bundle.Encode(&b, append([]bundle.Entry{
			{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("Say hi\n")},
			{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("version = \"1.0\"\n")},
			{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian\n")},
			{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("true\n")},
		}, extra...))
		if err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	chain := strings.Repeat("s/", 10) + strings.TrimSuffix(strings.Repeat("../", 10), "/")
	ds := filepath.Join(dir, "pool.parquet")
	w, err := pool.Create(ds, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nested := "lexical/esc" + outside + "/keep"
	w.Write("lexical", task(
		bundle.Entry{Name: "s", Kind: bundle.KindSymlink, Linkname: "."},
		bundle.Entry{Name: "esc", Kind: bundle.KindSymlink, Linkname: chain}))
	w.Write(nested, task())
	w.Write("honest", task())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stdout, code := run(t, "validate", "--pool", ds)
	if code != exitItemFailure {
		t.Fatalf("validate exit %d, want %d", code, exitItemFailure)
	}
	for _, want := range []string{"lexical\tlink_escapes_tree", nested + "\tnested_path"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("validate output lacks %q", want)
		}
	}
	dest := filepath.Join(dir, "dest")
	stdout, code = run(t, "unpack", ds, "-d", dest, "--overwrite")
	if code != exitItemFailure {
		t.Fatalf("unpack exit %d, want %d", code, exitItemFailure)
	}
	if !strings.Contains(stdout, "unpacked 1 tasks") {
		t.Errorf("unpack output: %s", stdout)
	}
	if data, err := os.ReadFile(sentinel); err != nil || string(data) != "precious" {
		t.Fatalf("sentinel: %q, %v", data, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(outside, "keep")); len(entries) != 1 {
		t.Fatalf("written beside the sentinel: %v", entries)
	}
	if entries, _ := os.ReadDir(dest); len(entries) != 1 || entries[0].Name() != "honest" {
		t.Fatalf("dest holds %v, want only honest", entries)
	}
}
