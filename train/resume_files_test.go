package train

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTruncateJSONLSetsTornTailAside: on resume, the lines of steps after
// the checkpoint are dropped, a torn last line is copied aside (not lost)
// and logged, and the file ends on a whole line for the next append.
func TestTruncateJSONLSetsTornTailAside(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "metrics.jsonl")
	data := "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n{\"step\":4,\"rew"
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	kept, err := truncateJSONL(name, 2, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"step\":1}\n{\"step\":2}\n"; string(kept) != want {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if got, _ := os.ReadFile(name); string(got) != string(kept) {
		t.Errorf("file holds %q, want %q", got, kept)
	}
	asides, _ := filepath.Glob(name + ".torn-*")
	if len(asides) != 1 {
		t.Fatalf("set aside: %v, want one file", asides)
	}
	if b, _ := os.ReadFile(asides[0]); string(b) != "{\"step\":4,\"rew" {
		t.Errorf("set aside %q", b)
	}
	if !strings.Contains(logs.String(), "torn last line") || !strings.Contains(logs.String(), "metrics.jsonl") {
		t.Errorf("no warning naming the file: %s", logs.String())
	}
}
