package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEachDecisionOrderAndErrors: decisions come back in file order across
// parse batches, blank lines are skipped, and a bad line is reported by
// its number with nothing after it delivered.
func TestEachDecisionOrderAndErrors(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1500; i++ {
		if i == 700 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, `{"index":%d,"path":"t%d","stage":"validate","verdict":"keep","reason":"valid"}`+"\n", i, i)
	}
	name := filepath.Join(t.TempDir(), DecisionsFile)
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []int64
	if err := EachDecision(name, func(d Decision) error { got = append(got, d.Index); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1500 {
		t.Fatalf("got %d decisions, want 1500", len(got))
	}
	for i, idx := range got {
		if idx != int64(i) {
			t.Fatalf("decision %d has index %d: order lost", i, idx)
		}
	}

	lines := strings.SplitAfter(b.String(), "\n")
	lines[1200] = "{not json\n" // file line 1201 (line 701 is the blank one)
	if err := os.WriteFile(name, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	err := EachDecision(name, func(d Decision) error { got = append(got, d.Index); return nil })
	if err == nil || !strings.Contains(err.Error(), "line 1201:") {
		t.Fatalf("err = %v, want one naming line 1201", err)
	}
	if len(got) != 1199 {
		t.Errorf("%d decisions delivered before the bad line, want 1199", len(got))
	}
}

// TestEachDecisionAcrossChunks: a file of several read chunks, with lines
// cut by chunk boundaries, one line longer than a chunk and no newline at
// the end, reads back whole and in order; a bad line past the first chunk
// is reported by its number.
func TestEachDecisionAcrossChunks(t *testing.T) {
	const n = 12000
	long := strings.Repeat("x", decisionChunk+1000)
	var b strings.Builder
	for i := 0; i < n; i++ {
		detail := fmt.Sprintf("task %d", i)
		if i == 5000 {
			detail = long
		}
		fmt.Fprintf(&b, `{"index":%d,"path":"t%d","stage":"validate","verdict":"keep","reason":"valid","detail":%q}`, i, i, detail)
		if i < n-1 {
			b.WriteString("\n")
		}
	}
	if b.Len() < 4*decisionChunk {
		t.Fatalf("file is %d bytes: too small to span chunks", b.Len())
	}
	name := filepath.Join(t.TempDir(), DecisionsFile)
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := 0
	err := EachDecision(name, func(d Decision) error {
		wantDetail := fmt.Sprintf("task %d", got)
		if got == 5000 {
			wantDetail = long
		}
		if d.Index != int64(got) || d.Path != fmt.Sprintf("t%d", got) || d.Detail != wantDetail {
			return fmt.Errorf("decision %d: index %d path %q detail of %d bytes", got, d.Index, d.Path, len(d.Detail))
		}
		got++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("got %d decisions, want %d", got, n)
	}

	lines := strings.SplitAfter(b.String(), "\n")
	lines[9000] = "{not json\n"
	if err := os.WriteFile(name, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	got = 0
	err = EachDecision(name, func(Decision) error { got++; return nil })
	if err == nil || !strings.Contains(err.Error(), "line 9001:") {
		t.Fatalf("err = %v, want one naming line 9001", err)
	}
	if got != 9000 {
		t.Errorf("%d decisions delivered before the bad line, want 9000", got)
	}
}
