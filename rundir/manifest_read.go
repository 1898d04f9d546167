package rundir

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
)

// ReadManifest reads a run's tasks.parquet back into tasks with their
// stage marks (for the given stage names, in order): what Merge combines.
// A task is alive when its final verdict is keep. The layout places each
// stage's score (StageMark.ScoreSeconds or ScoreRate) and gives the
// `proof` column (absent from older manifests) to the stage that records
// one.
func ReadManifest(name string, stages []string, layout Layout) ([]*Task, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := parquet.NewReader(f)
	defer r.Close()
	col := map[string]int{}
	for _, path := range r.Schema().Columns() {
		leaf, _ := r.Schema().Lookup(path...)
		col[path[0]] = leaf.ColumnIndex
	}
	// get returns the column's value in row, or a null value when the
	// column is absent (older manifests) or null.
	get := func(row parquet.Row, name string) parquet.Value {
		if i, ok := col[name]; ok && i < len(row) {
			return row[i]
		}
		return parquet.NullValue()
	}
	str := func(v parquet.Value) string {
		if v.IsNull() {
			return ""
		}
		return string(v.ByteArray())
	}
	num := func(v parquet.Value) float64 {
		if v.IsNull() {
			return 0
		}
		return v.Double()
	}
	proofStage := layout.ProofStage(stages)
	var tasks []*Task
	rows := make([]parquet.Row, 256)
	for {
		n, err := r.ReadRows(rows)
		for _, row := range rows[:n] {
			t := &Task{Index: get(row, "index").Int64(), Path: str(get(row, "path")), Hash: str(get(row, "hash")),
				EnvHash: str(get(row, "env_hash")), BlobBytes: get(row, "bundle_bytes").Int64(), Stratum: str(get(row, "stratum"))}
			for _, s := range stages {
				v := get(row, s+"_verdict")
				if v.IsNull() {
					continue
				}
				m := StageMark{Stage: s, Verdict: Verdict(v.ByteArray()), Reason: str(get(row, s+"_reason")),
					Seconds: num(get(row, s+"_seconds"))}
				ms := MarkMeasure{SandboxSeconds: num(get(row, s+"_sandbox_seconds"))}
				if v := get(row, s+"_runs"); !v.IsNull() {
					ms.Runs = v.Int32()
				}
				if v := get(row, s+"_passes"); !v.IsNull() {
					ms.Passes = v.Int32()
				}
				if v := get(row, s+"_score"); !v.IsNull() {
					sc := v.Double()
					if ms.ScoreSeconds, ms.ScoreRate, err = layout[s].Score.Split(&sc); err != nil {
						return nil, fmt.Errorf("%s: %s_score: %w", name, s, err)
					}
				}
				if v := get(row, s+"_from_ledger"); !v.IsNull() {
					ms.FromLedger = v.Boolean()
				}
				if s == proofStage {
					ms.Proof = str(get(row, "proof"))
				}
				m.SetMeasure(ms)
				t.Marks = append(t.Marks, m)
				t.LastStage = s
			}
			t.Alive = finalVerdict(t) == Keep
			tasks = append(tasks, t)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return tasks, nil
}
