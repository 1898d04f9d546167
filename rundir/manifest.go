package rundir

import (
	"bufio"
	"fmt"
	"os"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// WriteManifest writes one row per input task: identity (index, path,
// content and environment hashes, bundle size), the final verdict, and for
// every stage its verdict, reason and seconds (null where the task did not
// reach the stage), its score where the layout gives it one, and for
// stages with evidence the runs spent, the runs that passed and the sandbox
// seconds. Columns are flat, named <stage>_verdict, <stage>_reason,
// <stage>_seconds, <stage>_score, <stage>_runs, ... for DuckDB or pandas.
// When a stage of the layout records a proof (the verifier gate), the
// `proof` column holds it (null where the task did not reach that stage).
func WriteManifest(name string, tasks []*Task, stages []string, layout Layout) error {
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
	proofStage := layout.ProofStage(stages)
	if proofStage != "" {
		g["proof"] = parquet.Optional(parquet.String())
	}
	for _, s := range stages {
		g[s+"_verdict"] = parquet.Optional(parquet.String())
		g[s+"_reason"] = parquet.Optional(parquet.String())
		g[s+"_seconds"] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
		if layout[s].Score != NoScore {
			g[s+"_score"] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
		}
		if layout[s].Evidence {
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
	cols, err := rb.manifestColumns(stages)
	if err != nil {
		return fail(err)
	}
	// Rows are built in place in buffers reused across flushes: WriteRows
	// copies the values into the column buffers.
	rows := make([]parquet.Row, manifestBatch)
	for i := range rows {
		rows[i] = make(parquet.Row, len(rb.nulls))
	}
	n := 0
	flush := func() error {
		_, err := w.WriteRows(rows[:n])
		n = 0
		return err
	}
	for _, t := range tasks {
		row := rows[n]
		copy(row, rb.nulls)
		rb.int64(row, cols.index, t.Index)
		rb.str(row, cols.path, t.Path)
		rb.int64(row, cols.bundleBytes, t.BlobBytes)
		rb.str(row, cols.finalVerdict, string(finalVerdict(t)))
		if t.Hash != "" {
			rb.str(row, cols.hash, t.Hash)
		}
		if t.EnvHash != "" {
			rb.str(row, cols.envHash, t.EnvHash)
		}
		if t.Stratum != "" {
			rb.str(row, cols.stratum, t.Stratum)
		}
		if k := len(t.Marks); k > 0 {
			last := t.Marks[k-1]
			rb.str(row, cols.finalStage, last.Stage)
			rb.str(row, cols.finalReason, last.Reason)
		}
		for _, m := range t.Marks {
			sc, ok := cols.stages[m.Stage]
			if !ok {
				return fail(fmt.Errorf("task %d has a decision of stage %q, which has no manifest columns", t.Index, m.Stage))
			}
			rb.str(row, sc.verdict, string(m.Verdict))
			rb.str(row, sc.reason, m.Reason)
			rb.double(row, sc.seconds, m.Seconds)
			ms := m.Measured()
			if m.Stage == proofStage && ms.Proof != "" && cols.proof >= 0 {
				rb.str(row, cols.proof, ms.Proof)
			}
			if v := JoinScore(ms.ScoreSeconds, ms.ScoreRate); v != nil && sc.score >= 0 {
				rb.double(row, sc.score, *v)
			}
			if sc.runs >= 0 && m.Verdict != Error {
				rb.int32(row, sc.runs, ms.Runs)
				rb.int32(row, sc.passes, ms.Passes)
				rb.double(row, sc.sandboxSeconds, ms.SandboxSeconds)
				rb.boolean(row, sc.fromLedger, ms.FromLedger)
			}
		}
		n++
		if n == len(rows) {
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

// manifestBatch is how many rows are handed to the writer at a time.
const manifestBatch = 256

// rowBuilder sets the values of flat parquet rows by column index, with
// the definition level each column needs. Columns are resolved by name
// once per manifest: resolving them per value (a map lookup of a
// concatenated name) and copying each string was most of the manifest's
// time.
type rowBuilder struct {
	index map[string]int // column name → leaf index
	def   []int          // definition level of a set value, by column
	nulls parquet.Row    // a row of nulls, copied into each row first
}

func newRowBuilder(schema *parquet.Schema) *rowBuilder {
	cols := schema.Columns()
	rb := &rowBuilder{index: make(map[string]int, len(cols)), def: make([]int, len(cols)), nulls: make(parquet.Row, len(cols))}
	for _, path := range cols {
		leaf, _ := schema.Lookup(path...)
		i := leaf.ColumnIndex
		rb.index[path[0]] = i
		if leaf.Node.Optional() {
			rb.def[i] = 1
		}
		rb.nulls[i] = parquet.NullValue().Level(0, 0, i)
	}
	return rb
}

// col is a column's index, or -1 when the schema has no such column.
func (rb *rowBuilder) col(name string) int {
	if i, ok := rb.index[name]; ok {
		return i
	}
	return -1
}

// manifestCols are the manifest's columns, resolved.
type manifestCols struct {
	index, path, hash, envHash, bundleBytes, finalVerdict, finalStage, finalReason, stratum int
	proof                                                                                   int // -1: no proof column
	stages                                                                                  map[string]stageCols
}

// stageCols are one stage's columns; score and the sandbox columns are -1
// for stages without them.
type stageCols struct {
	verdict, reason, seconds, score, runs, passes, sandboxSeconds, fromLedger int
}

func (rb *rowBuilder) manifestColumns(stages []string) (manifestCols, error) {
	var missing []string
	need := func(name string) int {
		i := rb.col(name)
		if i < 0 {
			missing = append(missing, name)
		}
		return i
	}
	c := manifestCols{index: need("index"), path: need("path"), hash: need("hash"), envHash: need("env_hash"),
		bundleBytes: need("bundle_bytes"), finalVerdict: need("final_verdict"), finalStage: need("final_stage"),
		finalReason: need("final_reason"), stratum: need("stratum"), proof: rb.col("proof"), stages: make(map[string]stageCols, len(stages))}
	for _, s := range stages {
		c.stages[s] = stageCols{verdict: need(s + "_verdict"), reason: need(s + "_reason"), seconds: need(s + "_seconds"),
			score: rb.col(s + "_score"), runs: rb.col(s + "_runs"), passes: rb.col(s + "_passes"),
			sandboxSeconds: rb.col(s + "_sandbox_seconds"), fromLedger: rb.col(s + "_from_ledger")}
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("no columns %q in the manifest schema", missing)
	}
	return c, nil
}

func (rb *rowBuilder) set(row parquet.Row, i int, v parquet.Value) { row[i] = v.Level(0, rb.def[i], i) }

// str sets a string value without copying it: the writer copies the
// bytes into its column buffer, and the strings outlive the call.
func (rb *rowBuilder) str(row parquet.Row, i int, v string) {
	rb.set(row, i, parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(v), len(v))))
}
func (rb *rowBuilder) int64(row parquet.Row, i int, v int64) { rb.set(row, i, parquet.Int64Value(v)) }
func (rb *rowBuilder) int32(row parquet.Row, i int, v int32) { rb.set(row, i, parquet.Int32Value(v)) }
func (rb *rowBuilder) double(row parquet.Row, i int, v float64) {
	rb.set(row, i, parquet.DoubleValue(v))
}
func (rb *rowBuilder) boolean(row parquet.Row, i int, v bool) {
	rb.set(row, i, parquet.BooleanValue(v))
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
