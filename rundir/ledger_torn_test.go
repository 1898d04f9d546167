package rundir

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLedgerTornAtEveryOffset: a ledger whose last entry was cut at any
// byte reopens with every complete entry, the cut bytes copied aside
// byte for byte (never dropped), and a following Put lands on a fresh
// line: a reopen reads back everything.
func TestLedgerTornAtEveryOffset(t *testing.T) {
	base := t.TempDir()
	name := filepath.Join(base, "whole", LedgerFile)
	os.MkdirAll(filepath.Dir(name), 0o755)
	l, err := OpenLedger(name)
	if err != nil {
		t.Fatal(err)
	}
	rate := 0.5
	for i, e := range []Entry{
		{Verdict: Keep, Reason: "ok"},
		{Verdict: Drop, Reason: "flaky", Detail: `say "hi"`, ScoreRate: &rate, Evidence: &Evidence{Runs: 3, Passes: 1}},
		{Verdict: Drop, Reason: "build_failed", Detail: "step 3: exit 1\nmore", Flags: []string{"a"}},
	} {
		if err := l.Put(fmt.Sprintf("k%d", i), e); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	whole, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	last := bytes.LastIndexByte(whole[:len(whole)-1], '\n') + 1
	for cut := last; cut < len(whole); cut++ {
		dir := filepath.Join(base, fmt.Sprint(cut))
		os.MkdirAll(dir, 0o755)
		name := filepath.Join(dir, LedgerFile)
		if err := os.WriteFile(name, whole[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLedger(name)
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		complete := cut == len(whole)-1 // only the newline is missing
		want := 2
		if complete {
			want = 3
		}
		if l.Len() != want || l.Unreadable() != 0 {
			t.Errorf("cut at %d: %d entries, %d unreadable; want %d, 0", cut, l.Len(), l.Unreadable(), want)
		}
		torn := l.Torn()
		switch {
		case cut == last || complete:
			if torn != nil {
				t.Errorf("cut at %d: torn %+v, want none", cut, torn)
			}
		case torn == nil:
			t.Errorf("cut at %d: torn bytes not reported", cut)
		default:
			aside, err := os.ReadFile(torn.SavedAs)
			if err != nil || !bytes.Equal(aside, whole[last:cut]) || torn.Bytes != int64(cut-last) {
				t.Errorf("cut at %d: set aside %q (%d bytes reported, %v), want %q", cut, aside, torn.Bytes, err, whole[last:cut])
			}
			if !strings.HasPrefix(filepath.Base(torn.SavedAs), LedgerFile+".torn-") {
				t.Errorf("cut at %d: set aside in %s", cut, torn.SavedAs)
			}
		}
		if err := l.Put("new", Entry{Verdict: Keep, Reason: "after"}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		l, err = OpenLedger(name)
		if err != nil {
			t.Fatal(err)
		}
		if l.Len() != want+1 || l.Torn() != nil || l.Unreadable() != 0 {
			t.Errorf("cut at %d, after a Put: %d entries, torn %+v, %d unreadable; want %d, none, 0", cut, l.Len(), l.Torn(), l.Unreadable(), want+1)
		}
		for i := 0; i < want; i++ {
			if _, ok := l.Get(fmt.Sprintf("k%d", i), NoScore); !ok && i != 1 {
				t.Errorf("cut at %d: k%d lost", cut, i)
			}
		}
		if _, ok := l.Get("k1", ScoreRate); !ok {
			t.Errorf("cut at %d: k1 lost", cut)
		}
		if e, ok := l.Get("new", NoScore); !ok || e.Reason != "after" {
			t.Errorf("cut at %d: the entry put after reopening reads back %+v, %v", cut, e, ok)
		}
		l.Close()
	}
}

// TestLedgerMiddleLines: an entry an older otcurate appended onto a torn
// line is recovered; a line that is no entry at all is skipped, counted,
// and reported by RepairJSONL with its line number.
func TestLedgerMiddleLines(t *testing.T) {
	name := filepath.Join(t.TempDir(), LedgerFile)
	data := `{"key":"a","verdict":"keep","reason":"ok","at":"2026-01-01T00:00:00Z"}
{"key":"torn","verdict":"ke{"key":"b","verdict":"drop","reason":"flaky","at":"2026-01-01T00:00:00Z"}
garbage \x00 here
{"key":"c","verdict":"keep","reason":"ok","at":"2026-01-01T00:00:00Z"}
`
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	torn, bad, err := RepairJSONL(name, 10)
	if err != nil || torn != nil {
		t.Fatalf("RepairJSONL: %+v, %v", torn, err)
	}
	if len(bad) != 2 || bad[0].Line != 2 || bad[1].Line != 3 || bad[1].Offset != int64(strings.Index(data, "garbage")) {
		t.Errorf("bad lines %+v, want lines 2 and 3", bad)
	}
	l, err := OpenLedger(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, k := range []string{"a", "b", "c"} {
		if _, ok := l.Get(k, NoScore); !ok {
			t.Errorf("%s lost", k)
		}
	}
	if l.Len() != 3 || l.Unreadable() != 1 {
		t.Errorf("%d entries, %d unreadable; want 3, 1", l.Len(), l.Unreadable())
	}
}

// TestSetAsideTornTailCases: files that need nothing are left alone.
func TestSetAsideTornTailCases(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		data, want string
		torn       bool
	}{
		{"", "", false},
		{"{}\n", "{}\n", false},
		{"{}\n{\"a\":1}", "{}\n{\"a\":1}\n", false},
		{"{\"a\"", "", true},
		{"{}\n{\"a\"", "{}\n", true},
	} {
		name := filepath.Join(dir, "f.jsonl")
		os.WriteFile(name, []byte(c.data), 0o644)
		torn, err := SetAsideTornTail(name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(name)
		if string(got) != c.want || (torn != nil) != c.torn {
			t.Errorf("%q: file %q, torn %+v; want %q, torn %v", c.data, got, torn, c.want, c.torn)
		}
	}
	if torn, err := SetAsideTornTail(filepath.Join(dir, "absent")); torn != nil || err != nil {
		t.Errorf("absent file: %+v, %v", torn, err)
	}
}
