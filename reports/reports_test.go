package reports

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
)

// TestInspectSamplePool checks the inspection of the committed sample pool
// against what its labels say (testdata/sample-pool.labels.jsonl): 60 rows
// (50 with an oracle, 10 solution-less pymethods tasks), 9 broken bundles of
// four kinds, one duplicate.
func TestInspectSamplePool(t *testing.T) {
	ins, err := Inspect(context.Background(), "../testdata/sample-pool.parquet", bundle.Limits{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Rows != 60 || ins.Valid != 51 || ins.Invalid != 9 || ins.Duplicates != 1 {
		t.Fatalf("rows %d valid %d invalid %d duplicates %d", ins.Rows, ins.Valid, ins.Invalid, ins.Duplicates)
	}
	want := map[string]int64{"invalid_task_toml": 4, "link_escapes_tree": 2, "unsafe_member_path": 2, "truncated_gzip": 1}
	for r, n := range want {
		if ins.InvalidByReason[r] != n || ins.Examples[r] == "" {
			t.Errorf("%s: %d (example %q), want %d", r, ins.InvalidByReason[r], ins.Examples[r], n)
		}
	}
	if len(ins.Columns) != 2 || ins.Columns[0].Name != "path" || ins.Columns[1].Name != "task_binary" || ins.RowGroups != 1 {
		t.Errorf("layout: %+v, %d row groups", ins.Columns, ins.RowGroups)
	}
	if ins.BlobBytes.Min <= 0 || ins.BlobBytes.Min > ins.BlobBytes.Median || ins.BlobBytes.Median > ins.BlobBytes.Max {
		t.Errorf("size stats out of order: %+v", ins.BlobBytes)
	}
	if ins.UniqueEnvironments < 2 || ins.UniqueEnvironments > 40 {
		t.Errorf("unique environments = %d", ins.UniqueEnvironments)
	}
}

func TestWriteSummary(t *testing.T) {
	s := &pipeline.Summary{TasksIn: 10, TasksKept: 7, WallSeconds: 1.3, Output: []string{"out.parquet"},
		Funnel: []*pipeline.StageSummary{
			{Stage: "validate", In: 10, Kept: 8, Dropped: 2, DroppedByReason: map[string]int64{"not_gzip": 1, "empty_blob": 1}},
			{Stage: "dedup", In: 8, Kept: 7, Dropped: 1, DroppedByReason: map[string]int64{"duplicate_content": 1}},
		}}
	var buf bytes.Buffer
	WriteSummary(&buf, s)
	out := buf.String()
	for _, want := range []string{"finished in 1.3s — 10 tasks in, 7 kept", "validate            10        8        2       0  empty_blob=1 not_gzip=1",
		"duplicate_content=1", "wrote out.parquet"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	s.Interrupted = true
	buf.Reset()
	WriteSummary(&buf, s)
	if !strings.Contains(buf.String(), "INTERRUPTED") {
		t.Error("an interrupted run is not said to be interrupted")
	}
}

// TestProofLine: the end-of-build line states the output's proof split,
// every kind named even at 0, and nothing when no proof was recorded or
// the run was interrupted.
func TestProofLine(t *testing.T) {
	cases := []struct {
		name string
		sum  pipeline.Summary
		want string
	}{
		{"mixed", pipeline.Summary{TasksKept: 31, KeptByProof: map[string]int64{"oracle": 24, "none": 7}},
			"kept 31: 24 oracle, 0 supplied, 0 policy, 7 unproven (verifier_unproven)"},
		{"all kinds", pipeline.Summary{TasksKept: 10, KeptByProof: map[string]int64{"oracle": 1, "supplied": 2, "policy": 3, "none": 4}},
			"kept 10: 1 oracle, 2 supplied, 3 policy, 4 unproven (verifier_unproven)"},
		{"unknown kind and unrecorded", pipeline.Summary{TasksKept: 5, KeptByProof: map[string]int64{"oracle": 2, "zeta": 1}},
			"kept 5: 2 oracle, 0 supplied, 0 policy, 0 unproven (verifier_unproven), 1 zeta, 2 without a recorded proof"},
		{"no gate", pipeline.Summary{TasksKept: 5}, ""},
		{"interrupted", pipeline.Summary{TasksKept: 0, Interrupted: true, KeptByProof: map[string]int64{"oracle": 2}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ProofLine(&c.sum); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			var buf bytes.Buffer
			WriteSummary(&buf, &c.sum)
			if c.want != "" && !strings.Contains(buf.String(), c.want+"\n") {
				t.Errorf("WriteSummary lacks the proof line:\n%s", buf.String())
			}
		})
	}
}
