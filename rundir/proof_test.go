package rundir

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestManifestProofColumn: the verifier gate's proof is the manifest's
// `proof` column (null where the task did not reach the gate), read back
// onto the gate's mark; a manifest written without a proof stage (an
// older one) has no such column and still reads.
func TestManifestProofColumn(t *testing.T) {
	layout := Layout{"flaky": {Evidence: true, Score: ScoreSeconds, Proof: true}}
	stages := []string{"validate", "flaky"}
	tasks := []*Task{
		{Index: 0, Path: "oracle", Marks: []StageMark{{Stage: "validate", Verdict: Keep, Reason: "valid"}, {Stage: "flaky", Verdict: Keep, Reason: "oracle_passes", Measure: &MarkMeasure{Proof: "oracle"}}}},
		{Index: 1, Path: "none", Marks: []StageMark{{Stage: "validate", Verdict: Keep, Reason: "valid"}, {Stage: "flaky", Verdict: Keep, Reason: "verifier_unproven", Measure: &MarkMeasure{Proof: "none"}}}},
		{Index: 2, Path: "early", Marks: []StageMark{{Stage: "validate", Verdict: Drop, Reason: "not_gzip"}}},
	}
	cases := []struct {
		name   string
		layout Layout
		want   []string // proof per row; "-" = null
	}{
		{"with gate", layout, []string{"oracle", "none", "-"}},
		{"older layout", Layout{"flaky": {Evidence: true, Score: ScoreSeconds}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), ManifestFile)
			if err := WriteManifest(name, tasks, stages, c.layout); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			leaf, has := f.Schema().Lookup("proof")
			if has != (c.want != nil) {
				t.Fatalf("proof column present: %v, want %v", has, c.want != nil)
			}
			if has {
				rows := make([]parquet.Row, 3)
				r := parquet.NewReader(bytes.NewReader(data))
				n, _ := r.ReadRows(rows)
				if n != 3 {
					t.Fatalf("read %d rows", n)
				}
				for i, w := range c.want {
					v := rows[i][leaf.ColumnIndex]
					got := "-"
					if !v.IsNull() {
						got = string(v.ByteArray())
					}
					if got != w {
						t.Errorf("row %d: proof %q, want %q", i, got, w)
					}
				}
			}
			// Read back with the gate's layout: the proof lands on the
			// flaky mark, or stays empty for the older manifest.
			back, err := ReadManifest(name, stages, layout)
			if err != nil {
				t.Fatal(err)
			}
			for i, tk := range back {
				want := ""
				if c.want != nil && c.want[i] != "-" {
					want = c.want[i]
				}
				got := ""
				for _, m := range tk.Marks {
					if m.Stage == "flaky" {
						got = m.Proof()
					}
				}
				if got != want {
					t.Errorf("row %d read back: proof %q, want %q", i, got, want)
				}
			}
		})
	}
}

// TestDecisionProofOnDisk: a decision's proof is written as `proof` and
// read back; a decision without one writes no key (the static stages'
// lines are unchanged).
func TestDecisionProofOnDisk(t *testing.T) {
	for _, d := range []Decision{
		{Index: 1, Path: "a", Stage: "flaky", Verdict: Keep, Reason: "verifier_unproven", Proof: "none"},
		{Index: 2, Path: "b", Stage: "lint", Verdict: Keep, Reason: "clean"},
	} {
		line, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if has := bytes.Contains(line, []byte(`"proof"`)); has != (d.Proof != "") {
			t.Errorf("%s: %s", d.Path, line)
		}
		if fast, ok := appendDecisionJSON(nil, &d); ok && !bytes.Equal(bytes.TrimSuffix(fast, []byte("\n")), line) {
			t.Errorf("%s: fast path %s, encoder %s", d.Path, fast, line)
		}
		var w decisionJSON
		if err := json.Unmarshal(line, &w); err != nil {
			t.Fatal(err)
		}
		back, err := w.decision(Layout{})
		if err != nil {
			t.Fatal(err)
		}
		if back.Proof != d.Proof {
			t.Errorf("%s: proof read back %q, want %q", d.Path, back.Proof, d.Proof)
		}
	}
}

// TestLedgerKeepsProof: a ledger entry's proof survives a reopen.
func TestLedgerKeepsProof(t *testing.T) {
	name := filepath.Join(t.TempDir(), LedgerFile)
	l, err := OpenLedger(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Put("k", Entry{Verdict: Keep, Reason: "solution_passes", Proof: "supplied"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = OpenLedger(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e, ok := l.Get("k", NoScore)
	if !ok || e.Proof != "supplied" {
		t.Errorf("reopened entry %+v (found %v), want proof supplied", e, ok)
	}
}
