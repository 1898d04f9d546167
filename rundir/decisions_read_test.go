package rundir

import (
	"encoding/json"
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
	if err := EachDecision(name, nil, func(d Decision) error { got = append(got, d.Index); return nil }); err != nil {
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
	err := EachDecision(name, nil, func(d Decision) error { got = append(got, d.Index); return nil })
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
	err := EachDecision(name, nil, func(d Decision) error {
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
	err = EachDecision(name, nil, func(Decision) error { got++; return nil })
	if err == nil || !strings.Contains(err.Error(), "line 9001:") {
		t.Fatalf("err = %v, want one naming line 9001", err)
	}
	if got != 9000 {
		t.Errorf("%d decisions delivered before the bad line, want 9000", got)
	}
}

// TestScoresRoundTrip: a score is written as `score` whichever field holds
// it, and read back into the field the layout names; a score the layout
// does not expect is an error, and a nil layout reads none.
func TestScoresRoundTrip(t *testing.T) {
	sec, rate := 1.25, 0.5
	ds := []Decision{
		{Index: 0, Path: "a", Stage: "flaky", Verdict: Keep, Reason: "oracle_passes", ScoreSeconds: &sec},
		{Index: 0, Path: "a", Stage: "difficulty", Verdict: Keep, Reason: "band", ScoreRate: &rate},
		{Index: 1, Path: "b", Stage: "lint", Verdict: Keep, Reason: "clean"},
	}
	name := filepath.Join(t.TempDir(), DecisionsFile)
	if err := WriteDecisions(name, ds); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"index":0,"path":"a","stage":"flaky","verdict":"keep","reason":"oracle_passes","score":1.25}
{"index":0,"path":"a","stage":"difficulty","verdict":"keep","reason":"band","score":0.5}
{"index":1,"path":"b","stage":"lint","verdict":"keep","reason":"clean"}
`
	if string(data) != want {
		t.Errorf("file:\n%s\nwant:\n%s", data, want)
	}
	got, err := ReadDecisions(name, testLayout)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ScoreSeconds == nil || *got[0].ScoreSeconds != sec || got[0].ScoreRate != nil ||
		got[1].ScoreRate == nil || *got[1].ScoreRate != rate || got[1].ScoreSeconds != nil ||
		got[2].ScoreSeconds != nil || got[2].ScoreRate != nil {
		t.Errorf("read back %+v", got)
	}
	if got, err := ReadDecisions(name, nil); err != nil || got[0].ScoreSeconds != nil || got[1].ScoreRate != nil {
		t.Errorf("nil layout: %+v %v", got, err)
	}
	if _, err := ReadDecisions(name, Layout{"flaky": {Score: ScoreSeconds}}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("difficulty's score with a layout that has none: %v", err)
	}
	// encoding/json gives the file's line (MarshalJSON).
	for i, d := range ds {
		line, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if w := strings.Split(want, "\n")[i]; string(line) != w {
			t.Errorf("json.Marshal: %s, want %s", line, w)
		}
	}
}

// TestEachDecisionTornLastLine: a decisions file cut inside its last line
// (a build killed mid-write) delivers every whole line and then says the
// last one is torn, with its line number.
func TestEachDecisionTornLastLine(t *testing.T) {
	whole := `{"index":0,"path":"a","stage":"validate","verdict":"keep","reason":"valid"}` + "\n" +
		`{"index":1,"path":"b","stage":"validate","verdict":"keep","reason":"valid"}` + "\n"
	last := strings.Index(whole, "\n") + 1
	for cut := last + 1; cut < len(whole)-1; cut++ {
		name := filepath.Join(t.TempDir(), DecisionsFile)
		os.WriteFile(name, []byte(whole[:cut]), 0o644)
		n := 0
		err := EachDecision(name, nil, func(Decision) error { n++; return nil })
		if n != 1 || err == nil || !strings.Contains(err.Error(), "line 2: torn last line") {
			t.Errorf("cut at %d: %d decisions, %v", cut, n, err)
		}
	}
}
