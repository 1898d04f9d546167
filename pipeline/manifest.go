package pipeline

import (
	"bufio"
	"fmt"
	"os"

	"github.com/parquet-go/parquet-go"
)

// ManifestFile is the per-task manifest of a run.
const ManifestFile = "tasks.parquet"

// scoreStages have a <stage>_score column: the flaky stage's median
// verifier seconds, verifier_time's ratio to the pool median, the
// difficulty stage's pass rate.
var scoreStages = map[string]bool{StageFlaky: true, StageVerifierTime: true, StageDifficulty: true}

// sandboxStages have evidence columns: <stage>_runs, _passes,
// _sandbox_seconds and _from_ledger.
var sandboxStages = map[string]bool{StageEnv: true, StageFlaky: true, StageDifficulty: true}

// WriteManifest writes one row per input task: identity (index, path,
// content and environment hashes, bundle size), the final verdict, and for
// every stage its verdict, reason and seconds (null where the task did not
// reach the stage), its score where the stage measures one, and for sandbox
// stages the runs spent, the runs that passed and the sandbox seconds.
// Columns are flat, named <stage>_verdict, <stage>_reason, <stage>_seconds,
// <stage>_score, <stage>_runs, ... for DuckDB or pandas.
func WriteManifest(name string, tasks []*Task, stages []string) error {
	g := parquet.Group{
		"index":         parquet.Leaf(parquet.Int64Type),
		"path":          parquet.String(),
		"hash":          parquet.Optional(parquet.String()),
		"env_hash":      parquet.Optional(parquet.String()),
		"bundle_bytes":  parquet.Leaf(parquet.Int64Type),
		"final_verdict": parquet.String(),
		"final_stage":   parquet.Optional(parquet.String()),
		"final_reason":  parquet.Optional(parquet.String()),
		"stratum":       parquet.Optional(parquet.String()),
	}
	for _, s := range stages {
		g[s+"_verdict"] = parquet.Optional(parquet.String())
		g[s+"_reason"] = parquet.Optional(parquet.String())
		g[s+"_seconds"] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
		if scoreStages[s] {
			g[s+"_score"] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
		}
		if sandboxStages[s] {
			g[s+"_runs"] = parquet.Optional(parquet.Leaf(parquet.Int32Type))
			g[s+"_passes"] = parquet.Optional(parquet.Leaf(parquet.Int32Type))
			g[s+"_sandbox_seconds"] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
			g[s+"_from_ledger"] = parquet.Optional(parquet.Leaf(parquet.BooleanType))
		}
	}
	schema := parquet.NewSchema("task", g)
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	// Snappy, not zstd: a zstd encoder per column costs megabytes of
	// history buffers, which dominated small runs; every reader has snappy.
	w := parquet.NewGenericWriter[any](bw, schema, parquet.Compression(&parquet.Snappy),
		parquet.MaxRowsPerRowGroup(manifestRowGroup), parquet.CreatedBy("otcurate", "0.1.0", "dev"))
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	rb := newRowBuilder(schema)
	rows := make([]parquet.Row, 0, 256)
	flush := func() error {
		_, err := w.WriteRows(rows)
		rows = rows[:0]
		return err
	}
	for _, t := range tasks {
		rb.reset()
		rb.int64("index", t.Index)
		rb.str("path", t.Path)
		rb.int64("bundle_bytes", t.BlobBytes)
		rb.str("final_verdict", string(finalVerdict(t)))
		if t.Hash != "" {
			rb.str("hash", t.Hash)
		}
		if t.EnvHash != "" {
			rb.str("env_hash", t.EnvHash)
		}
		if t.Stratum != "" {
			rb.str("stratum", t.Stratum)
		}
		if n := len(t.Marks); n > 0 {
			last := t.Marks[n-1]
			rb.str("final_stage", last.Stage)
			rb.str("final_reason", last.Reason)
		}
		for _, m := range t.Marks {
			rb.str(m.Stage+"_verdict", string(m.Verdict))
			rb.str(m.Stage+"_reason", m.Reason)
			rb.double(m.Stage+"_seconds", m.Seconds)
			if m.Score != nil && scoreStages[m.Stage] {
				rb.double(m.Stage+"_score", *m.Score)
			}
			if sandboxStages[m.Stage] && m.Verdict != Error {
				rb.int32(m.Stage+"_runs", m.Runs)
				rb.int32(m.Stage+"_passes", m.Passes)
				rb.double(m.Stage+"_sandbox_seconds", m.SandboxSeconds)
				rb.boolean(m.Stage+"_from_ledger", m.FromLedger)
			}
		}
		if rb.err != nil {
			return fail(rb.err)
		}
		rows = append(rows, rb.row())
		if len(rows) == cap(rows) {
			if err := flush(); err != nil {
				return fail(err)
			}
		}
	}
	if err := flush(); err != nil {
		return fail(err)
	}
	if err := w.Close(); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, name)
}

// rowBuilder assembles flat parquet rows by column name, without the
// reflection of map or struct rows. Columns not set are null (optional
// columns) and setting a missing column is an error.
type rowBuilder struct {
	index    map[string]int // column name → leaf index
	optional []bool
	values   []parquet.Value
	set      []bool
	err      error
}

func newRowBuilder(schema *parquet.Schema) *rowBuilder {
	cols := schema.Columns()
	rb := &rowBuilder{index: make(map[string]int, len(cols)), optional: make([]bool, len(cols)),
		values: make([]parquet.Value, len(cols)), set: make([]bool, len(cols))}
	for _, path := range cols {
		leaf, _ := schema.Lookup(path...)
		rb.index[path[0]] = leaf.ColumnIndex
		rb.optional[leaf.ColumnIndex] = leaf.Node.Optional()
	}
	return rb
}

func (rb *rowBuilder) reset() {
	clear(rb.set)
}

func (rb *rowBuilder) put(col string, v parquet.Value) {
	i, ok := rb.index[col]
	if !ok {
		if rb.err == nil {
			rb.err = fmt.Errorf("no column %q in the manifest schema", col)
		}
		return
	}
	def := 0
	if rb.optional[i] {
		def = 1
	}
	rb.values[i], rb.set[i] = v.Level(0, def, i), true
}

func (rb *rowBuilder) str(col, v string)            { rb.put(col, parquet.ByteArrayValue([]byte(v))) }
func (rb *rowBuilder) int64(col string, v int64)    { rb.put(col, parquet.Int64Value(v)) }
func (rb *rowBuilder) int32(col string, v int32)    { rb.put(col, parquet.Int32Value(v)) }
func (rb *rowBuilder) double(col string, v float64) { rb.put(col, parquet.DoubleValue(v)) }
func (rb *rowBuilder) boolean(col string, v bool)   { rb.put(col, parquet.BooleanValue(v)) }

// row returns a fresh row of the values set since reset, nulls elsewhere.
func (rb *rowBuilder) row() parquet.Row {
	row := make(parquet.Row, len(rb.values))
	for i := range row {
		if rb.set[i] {
			row[i] = rb.values[i]
		} else {
			row[i] = parquet.NullValue().Level(0, 0, i)
		}
	}
	return row
}

func finalVerdict(t *Task) Verdict {
	if n := len(t.Marks); n > 0 && t.Marks[n-1].Verdict != Keep {
		return t.Marks[n-1].Verdict
	}
	if len(t.Marks) == 0 {
		return "undecided"
	}
	return Keep
}

// manifestRowGroup bounds the rows the manifest writer buffers: the
// column buffers of a whole 20,000-task manifest were megabytes of fresh
// memory (page faults) at the end of every run.
const manifestRowGroup = 4096
