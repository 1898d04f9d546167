package rundir

import (
	"bytes"
	"encoding/json"
	"testing"
)

func stdDecisionJSON(t testing.TB, d Decision) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAppendDecisionJSONMatchesEncodingJSON(t *testing.T) {
	score := 0.5
	for _, d := range []Decision{
		{Index: 0, Path: "tasks/a", Stage: "validate", Verdict: Keep, Reason: "valid"},
		{Index: 12345678901, Path: "t/<b>&\"q\"\\", Stage: "dedup", Verdict: Drop, Reason: "duplicate_content",
			Detail: "same content as x (hash 0123456789ab)", Hash: "deadbeef"},
		{Index: -1, Path: "ctl\x00\x01\b\f\n\r\t\x1f\x7f", Stage: "lint", Verdict: Keep, Reason: "clean",
			Flags: []string{"oversized_file", "instruction_shows_test_values"}},
		{Path: "bad utf8 \xff\xfe x \xe2\x80", Stage: "validate", Verdict: Drop, Reason: "bad_path"},
		{Path: "sep \u2028 \u2029 é 日本 🙂", Stage: "validate", Verdict: Error, Reason: "x"},
		{Path: "", Stage: "", Verdict: "", Reason: "", Flags: []string{}},
		{Path: "scored", Stage: "difficulty", Verdict: Keep, Reason: "band", ScoreRate: &score},
	} {
		got, ok := appendDecisionJSON(nil, &d)
		if d.ScoreSeconds != nil || d.ScoreRate != nil {
			if ok || len(got) != 0 {
				t.Errorf("%q: a scored decision must fall back to encoding/json", d.Path)
			}
			continue
		}
		if want := stdDecisionJSON(t, d); !ok || !bytes.Equal(got, want) {
			t.Errorf("%q:\n got %s\nwant %s", d.Path, got, want)
		}
	}
}

func FuzzAppendDecisionJSON(f *testing.F) {
	f.Add("tasks/a", "valid", "detail \"x\"", "h", "flag", int64(3))
	f.Add("\xff\u2028<>&", "r\n", "", "", "", int64(-9))
	f.Fuzz(func(t *testing.T, path, reason, detail, hash, flag string, index int64) {
		d := Decision{Index: index, Path: path, Stage: "validate", Verdict: Drop, Reason: reason, Detail: detail, Hash: hash}
		if flag != "" {
			d.Flags = []string{flag, path}
		}
		got, ok := appendDecisionJSON(nil, &d)
		if want := stdDecisionJSON(t, d); !ok || !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

func BenchmarkDecisionJSON(b *testing.B) {
	d := Decision{Index: 1234, Path: "pymethods/task-001234", Stage: "dedup", Verdict: Keep, Reason: "unique"}
	b.Run("encoding-json", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			_ = enc.Encode(d)
		}
	})
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, 512)
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = appendDecisionJSON(buf[:0], &d)
		}
	})
}
