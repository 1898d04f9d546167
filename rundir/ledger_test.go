package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLedgerReopens: entries survive a reopen with their score placed by
// the stage's kind, a torn last line is ignored, and an entry whose score
// does not fit the kind asked for is not served.
func TestLedgerReopens(t *testing.T) {
	name := filepath.Join(t.TempDir(), LedgerFile)
	l, err := OpenLedger(name)
	if err != nil {
		t.Fatal(err)
	}
	rate := 0.25
	ev := &Evidence{Runs: 4, Passes: 1}
	if err := l.Put("h|difficulty|", Entry{Verdict: Keep, Reason: "band", ScoreRate: &rate, Evidence: ev}); err != nil {
		t.Fatal(err)
	}
	if err := l.Put("h|env|", Entry{Verdict: Drop, Reason: "build_failed", Detail: "x"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"key":"torn","verdict":"ke`)
	f.Close()
	data, _ := os.ReadFile(name)
	if !strings.Contains(string(data), `"score":0.25`) {
		t.Errorf("ledger file lacks the score: %s", data)
	}

	l, err = OpenLedger(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Len() != 2 {
		t.Errorf("%d entries, want 2", l.Len())
	}
	for _, c := range []struct {
		key  string
		kind ScoreKind
		ok   bool
	}{
		{"h|difficulty|", ScoreRate, true},
		{"h|difficulty|", NoScore, false},
		{"h|env|", NoScore, true},
		{"torn", NoScore, false},
	} {
		e, ok := l.Get(c.key, c.kind)
		if ok != c.ok {
			t.Errorf("%s as %d: found %v, want %v", c.key, c.kind, ok, c.ok)
			continue
		}
		if ok && c.kind == ScoreRate && (e.ScoreRate == nil || *e.ScoreRate != rate || e.ScoreSeconds != nil || e.Evidence == nil || e.Evidence.Runs != 4) {
			t.Errorf("%s: %+v", c.key, e)
		}
	}
	if l.Hits() != 2 {
		t.Errorf("%d hits, want 2", l.Hits())
	}
}
