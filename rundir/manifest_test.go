package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// testLayout is the layout of otcurate's stages with a score or evidence.
var testLayout = Layout{
	"env":           {Evidence: true},
	"flaky":         {Evidence: true, Score: ScoreSeconds},
	"verifier_time": {Score: ScoreSeconds},
	"difficulty":    {Evidence: true, Score: ScoreRate},
}

// TestManifestRoundTrip writes every kind of column (required, optional,
// null, score, evidence) and reads it back with ReadManifest and with
// parquet-go's struct reader, which does not share the row builder.
func TestManifestRoundTrip(t *testing.T) {
	score := 0.25
	stages := []string{"validate", "env", "flaky", "select"}
	tasks := []*Task{
		{Index: 0, Path: "a", Hash: "h0", EnvHash: "e0", BlobBytes: 10, Stratum: "s", Marks: []StageMark{
			{Stage: "validate", Verdict: Keep, Reason: "valid", Seconds: 0.5},
			{Stage: "env", Verdict: Keep, Reason: "stable", Measure: &MarkMeasure{Runs: 2, Passes: 1, SandboxSeconds: 3.5, FromLedger: true}},
			{Stage: "flaky", Verdict: Drop, Reason: "flaky", Measure: &MarkMeasure{ScoreSeconds: &score, Runs: 9, Passes: 4, SandboxSeconds: 12}},
		}},
		{Index: 1, Path: "b", BlobBytes: 0, Marks: []StageMark{{Stage: "validate", Verdict: Drop, Reason: "not_gzip"}}},
		{Index: 2, Path: "c", Hash: "h2", EnvHash: "e2", BlobBytes: 7, Marks: []StageMark{
			{Stage: "validate", Verdict: Keep, Reason: "valid"},
			{Stage: "env", Verdict: Error, Reason: "engine_unavailable"},
		}},
		{Index: 3, Path: "d"},
	}
	name := filepath.Join(t.TempDir(), ManifestFile)
	if err := WriteManifest(name, tasks, stages, testLayout); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(name, stages, testLayout)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		tk.Alive = finalVerdict(tk) == Keep
		if n := len(tk.Marks); n > 0 {
			tk.LastStage = tk.Marks[n-1].Stage
		}
	}
	// An error mark keeps no evidence columns.
	tasks[2].Marks[1].Measure = nil
	if !reflect.DeepEqual(got, tasks) {
		for i := range got {
			t.Errorf("row %d: got %+v want %+v", i, *got[i], *tasks[i])
		}
	}

	type row struct {
		Index        int64    `parquet:"index"`
		Path         string   `parquet:"path"`
		Hash         *string  `parquet:"hash,optional"`
		FinalVerdict string   `parquet:"final_verdict"`
		FinalStage   *string  `parquet:"final_stage,optional"`
		FlakyScore   *float64 `parquet:"flaky_score,optional"`
		EnvRuns      *int32   `parquet:"env_runs,optional"`
		EnvLedger    *bool    `parquet:"env_from_ledger,optional"`
		SelectReason *string  `parquet:"select_reason,optional"`
	}
	rows, err := parquet.ReadFile[row](name)
	if err != nil {
		t.Fatal(err)
	}
	r0, r3 := rows[0], rows[3]
	if r0.FinalVerdict != "drop" || *r0.FinalStage != "flaky" || *r0.FlakyScore != 0.25 || *r0.EnvRuns != 2 || !*r0.EnvLedger || r0.SelectReason != nil {
		t.Errorf("row 0 = %+v", r0)
	}
	if r3.FinalVerdict != "undecided" || r3.Hash != nil || r3.FinalStage != nil || rows[2].EnvRuns != nil {
		t.Errorf("rows 2, 3 = %+v %+v", rows[2], r3)
	}
}

// TestManifestSpansRowGroups: a manifest longer than a row group is
// written in several and reads back whole and in order.
func TestManifestSpansRowGroups(t *testing.T) {
	n := 2*manifestRowGroup + 5
	stages := []string{"validate", "dedup"}
	tasks := make([]*Task, n)
	for i := range tasks {
		tasks[i] = &Task{Index: int64(i), Path: fmt.Sprintf("t-%06d", i), Hash: fmt.Sprint("h", i), BlobBytes: int64(i),
			Marks: []StageMark{{Stage: "validate", Verdict: Keep, Reason: "valid"}, {Stage: "dedup", Verdict: Keep, Reason: "unique"}}}
	}
	name := filepath.Join(t.TempDir(), ManifestFile)
	if err := WriteManifest(name, tasks, stages, testLayout); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	if g := len(pf.RowGroups()); g != 3 {
		t.Errorf("%d row groups, want 3", g)
	}
	got, err := ReadManifest(name, stages, testLayout)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d rows, want %d", len(got), n)
	}
	for i, tk := range got {
		if tk.Index != int64(i) || tk.Path != tasks[i].Path || tk.Hash != tasks[i].Hash || len(tk.Marks) != 2 {
			t.Fatalf("row %d: %+v", i, *tk)
		}
	}
}
