package pipeline

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
