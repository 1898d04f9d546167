package pipeline_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
)

// task packs a minimal valid task whose instruction is text.
func task(t testing.TB, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	err := bundle.Encode(&buf, []bundle.Entry{
		{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(text)},
		{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("schema_version = \"1.1\"\n")},
		{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian:bookworm\n")},
		{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("echo 1 > /logs/verifier/reward.txt\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// rawRow allows nulls and arbitrary bytes in the path.
type rawRow struct {
	Path *string `parquet:"path,optional"`
	Blob []byte  `parquet:"task_binary,optional"`
}

func str(s string) *string { return &s }

func writeRaw(t testing.TB, name string, rows []rawRow) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[rawRow](f, parquet.MaxRowsPerRowGroup(3))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func readDecisions(t testing.TB, name string) []pipeline.Decision {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []pipeline.Decision
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d pipeline.Decision
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("decisions.jsonl line %q: %v", sc.Text(), err)
		}
		out = append(out, d)
	}
	return out
}

func readOutput(t testing.TB, name string) []string {
	t.Helper()
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	if err := src.Each(context.Background(), nil, func(r pool.Record) error {
		paths = append(paths, r.Path)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return paths
}

func build(t testing.TB, ctx context.Context, src pool.Source, stages string, target int, seed int64) (string, *pipeline.Summary, error) {
	t.Helper()
	names, err := filters.ParseStages(stages)
	if err != nil {
		t.Fatal(err)
	}
	st, err := filters.Build(names, filters.Options{Target: target, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, _, err := pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: st, RunDir: filepath.Join(dir, "run"),
		Output: filepath.Join(dir, "out.parquet"), Workers: 3})
	return dir, sum, err
}

// TestBuildBadRowsAndDuplicates runs a pool mixing good rows with every
// row-level defect and checks each decision, the funnel and the output.
func TestBuildBadRowsAndDuplicates(t *testing.T) {
	b := task(t, "task b")
	rows := []rawRow{
		{Path: str("t/a"), Blob: task(t, "task a")},
		{Path: str("t/z-copy"), Blob: b},
		{Path: nil, Blob: task(t, "null path")},
		{Path: str("bad\xffpath"), Blob: task(t, "non utf8")},
		{Path: str("t/b"), Blob: b},
		{Path: str("t/a"), Blob: task(t, "same path again")},
		{Path: str("../escape"), Blob: task(t, "unsafe")},
		{Path: str("t/empty"), Blob: []byte{}},
		{Path: str("t/notgzip"), Blob: []byte("hello")},
		{Path: str("t/a-copy"), Blob: b},
		{Path: str("t/c"), Blob: task(t, "task c")},
	}
	name := filepath.Join(t.TempDir(), "pool.parquet")
	writeRaw(t, name, rows)
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	dir, sum, err := build(t, context.Background(), src, "validate,dedup,select", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range readDecisions(t, filepath.Join(dir, "run", rundir.DecisionsFile)) {
		key := fmt.Sprintf("%d/%s", d.Index, d.Stage)
		got[key] = string(d.Verdict) + ":" + d.Reason
		if d.Detail == "" && d.Verdict != pipeline.Keep {
			t.Errorf("%s: drop without detail", key)
		}
	}
	want := map[string]string{
		"0/validate": "keep:valid", "0/dedup": "keep:unique", "0/select": "keep:no_target",
		"1/validate": "keep:valid", "1/dedup": "drop:duplicate_content",
		"2/validate": "drop:null_path",
		"3/validate": "drop:non_utf8_path",
		"4/validate": "keep:valid", "4/dedup": "drop:duplicate_content",
		"5/validate": "drop:duplicate_path",
		"6/validate": "drop:unsafe_path",
		"7/validate": "drop:empty_blob",
		"8/validate": "drop:not_gzip",
		"9/validate": "keep:valid", "9/dedup": "keep:unique", "9/select": "keep:no_target",
		"10/validate": "keep:valid", "10/dedup": "keep:unique", "10/select": "keep:no_target",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decisions:\n got %v\nwant %v", got, want)
	}
	if out := readOutput(t, filepath.Join(dir, "out.parquet")); !reflect.DeepEqual(out, []string{"t/a", "t/a-copy", "t/c"}) {
		t.Errorf("output = %v", out)
	}
	var onDisk pipeline.Summary
	data, _ := os.ReadFile(filepath.Join(dir, "run", rundir.SummaryFile))
	if err := json.Unmarshal(data, &onDisk); err != nil {
		t.Fatal(err)
	}
	if onDisk.TasksIn != 11 || onDisk.TasksKept != 3 || sum.TasksKept != 3 {
		t.Errorf("summary in/kept = %d/%d", onDisk.TasksIn, onDisk.TasksKept)
	}
	v := onDisk.Funnel[0]
	if v.Stage != "validate" || v.In != 11 || v.Kept != 5 || v.Dropped != 6 || v.DroppedByReason["not_gzip"] != 1 {
		t.Errorf("validate funnel = %+v", v)
	}
	if d := onDisk.Funnel[1]; d.In != 5 || d.Kept != 3 || d.DroppedByReason["duplicate_content"] != 2 {
		t.Errorf("dedup funnel = %+v", d)
	}
	checkManifest(t, filepath.Join(dir, "run", rundir.ManifestFile))
}

type manifestRow struct {
	Index           int64    `parquet:"index"`
	Path            string   `parquet:"path"`
	FinalVerdict    string   `parquet:"final_verdict"`
	FinalReason     *string  `parquet:"final_reason,optional"`
	DedupVerdict    *string  `parquet:"dedup_verdict,optional"`
	ValidateSeconds *float64 `parquet:"validate_seconds,optional"`
}

// checkManifest: one row per input row, final verdicts as decided.
func checkManifest(t *testing.T, name string) {
	t.Helper()
	rows, err := parquet.ReadFile[manifestRow](name)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 11 {
		t.Fatalf("manifest has %d rows, want 11", len(rows))
	}
	want := map[int64]string{0: "keep/no_target", 1: "drop/duplicate_content", 2: "drop/null_path", 8: "drop/not_gzip", 10: "keep/no_target"}
	for _, r := range rows {
		if w, ok := want[r.Index]; ok {
			got := r.FinalVerdict + "/"
			if r.FinalReason != nil {
				got += *r.FinalReason
			}
			if got != w {
				t.Errorf("manifest row %d: %s, want %s", r.Index, got, w)
			}
		}
	}
	if rows[2].DedupVerdict != nil {
		t.Error("a task dropped by validate has a dedup verdict")
	}
	if rows[0].ValidateSeconds == nil || *rows[0].ValidateSeconds <= 0 {
		t.Error("validate seconds missing")
	}
}

// manyTasks is a pool of n distinct valid tasks in a task-dir-free
// in-memory form (a parquet file).
func manyTasks(t testing.TB, n int) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "many.parquet")
	w, err := pool.Create(name, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := w.Write(fmt.Sprintf("task-%04d", i), task(t, fmt.Sprintf("task number %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestSelectExactDeterministic(t *testing.T) {
	src, err := pool.Open(manyTasks(t, 200))
	if err != nil {
		t.Fatal(err)
	}
	sel := func(seed int64) []string {
		dir, _, err := build(t, context.Background(), src, "validate,dedup,select", 37, seed)
		if err != nil {
			t.Fatal(err)
		}
		return readOutput(t, filepath.Join(dir, "out.parquet"))
	}
	a, again, other := sel(1), sel(1), sel(2)
	if len(a) != 37 {
		t.Fatalf("selected %d, want 37", len(a))
	}
	if !reflect.DeepEqual(a, again) {
		t.Error("same seed selected different tasks")
	}
	if reflect.DeepEqual(a, other) {
		t.Error("different seeds selected the same tasks")
	}
	if !sort.StringsAreSorted(a) {
		t.Error("output is not in pool order")
	}
	// Fewer survivors than the target: all kept.
	dir, _, err := build(t, context.Background(), src, "validate,select", 500, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readOutput(t, filepath.Join(dir, "out.parquet"))); n != 200 {
		t.Errorf("target above pool size kept %d, want 200", n)
	}
}

// cancelingSource cancels the run after k records, like a Ctrl-C.
type cancelingSource struct {
	pool.Source
	k      int64
	cancel context.CancelFunc
}

func (c cancelingSource) Each(ctx context.Context, skip func(int64) bool, fn func(pool.Record) error) error {
	return c.Source.Each(ctx, skip, func(r pool.Record) error {
		if r.Index == c.k {
			c.cancel()
		}
		return fn(r)
	})
}

func TestInterruptLeavesConsistentRunDir(t *testing.T) {
	inner, err := pool.Open(manyTasks(t, 300))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, sum, err := build(t, ctx, cancelingSource{inner, 120, cancel}, "validate,dedup,select", 10, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if sum == nil || !sum.Interrupted {
		t.Fatal("summary not marked interrupted")
	}
	decisions := readDecisions(t, filepath.Join(dir, "run", rundir.DecisionsFile))
	if len(decisions) == 0 || len(decisions) > 125 {
		t.Errorf("%d decisions after interrupting at row 120", len(decisions))
	}
	for i, d := range decisions {
		if d.Index != int64(i) || d.Stage != filters.StageValidate {
			t.Fatalf("decision %d = %+v: want validate decisions in pool order", i, d)
		}
	}
	var onDisk pipeline.Summary
	data, err := os.ReadFile(filepath.Join(dir, "run", rundir.SummaryFile))
	if err != nil || json.Unmarshal(data, &onDisk) != nil || !onDisk.Interrupted {
		t.Fatalf("summary.json not written as interrupted: %v", err)
	}
	for _, leftover := range []string{"out.parquet", "out.parquet.tmp"} {
		if _, err := os.Stat(filepath.Join(dir, leftover)); err == nil {
			t.Errorf("%s exists after an interrupted run", leftover)
		}
	}
}

func TestUnbuiltStageIsRefused(t *testing.T) {
	for _, name := range []string{"difficulty"} {
		if _, err := filters.Build([]string{"validate", name}, filters.Options{}); err == nil {
			t.Errorf("stage %s was accepted although it is not built", name)
		}
	}
	if _, err := filters.Build([]string{"validate", "nonsense"}, filters.Options{}); err == nil {
		t.Error("unknown stage accepted")
	}
}

func TestTaskDirPool(t *testing.T) {
	src, err := pool.Open("../testdata/harbor-examples")
	if err != nil {
		t.Fatal(err)
	}
	dir, sum, err := build(t, context.Background(), src, "validate,dedup", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum.TasksIn != 5 || sum.TasksKept != 5 {
		t.Fatalf("fixtures: %d in, %d kept", sum.TasksIn, sum.TasksKept)
	}
	want := []string{"hello-alpine", "hello-healthcheck", "hello-user", "hello-workdir", "hello-world"}
	if got := readOutput(t, filepath.Join(dir, "out.parquet")); !reflect.DeepEqual(got, want) {
		t.Fatalf("output = %v", got)
	}
}

// TestOutputFromRetainedBlobs checks the output is the same bytes whether
// the kept bundles come from memory, from the pool, or from both (a budget
// that holds only some), with duplicates that dedup drops after validate
// kept them.
func TestOutputFromRetainedBlobs(t *testing.T) {
	dir := t.TempDir()
	var rows []rawRow
	for i := 0; i < 40; i++ {
		text := fmt.Sprintf("task %d", i)
		if i%7 == 3 {
			text = "task 0" // a duplicate of row 0's content
		}
		rows = append(rows, rawRow{Path: str(fmt.Sprintf("t-%02d", 39-i)), Blob: task(t, text)})
	}
	src, stages := validateDedupPool(t, dir, rows)
	var want []byte
	for _, budget := range []int64{-1, 0, int64(len(rows[0].Blob)) * 9} {
		sum, out := buildRetaining(t, src, stages, dir, budget)
		if sum.TasksKept != 34 {
			t.Fatalf("budget %d: kept %d, want 34", budget, sum.TasksKept)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
			// Row 0 (t-39) and its copies are dropped for t-01, the
			// lexicographically first of them, near the end.
			if paths := readOutput(t, out); len(paths) != 34 || paths[0] != "t-38" || paths[32] != "t-01" {
				t.Fatalf("output paths %v", paths)
			}
		} else if !bytes.Equal(got, want) {
			t.Fatalf("budget %d: output differs from the one read back from the pool", budget)
		}
	}
}

// TestAfterStagesSeesCompleteDecisions: the hook runs once, after the
// stages, with every decision already in decisions.jsonl and before the
// output exists; a failed run does not call it.
func TestAfterStagesSeesCompleteDecisions(t *testing.T) {
	dir := t.TempDir()
	var rows []rawRow
	for i := 0; i < 30; i++ {
		rows = append(rows, rawRow{Path: str(fmt.Sprintf("t-%02d", i)), Blob: task(t, fmt.Sprintf("task %d", i%25))})
	}
	src, stages := validateDedupPool(t, dir, rows)
	runDir, out := filepath.Join(dir, "run"), filepath.Join(dir, "out.parquet")
	calls, lines := 0, 0
	outputExisted := false
	_, res, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, RunDir: runDir, Output: out,
		AfterStages: func(r *pipeline.Result) {
			calls++
			ds, err := rundir.ReadDecisions(filepath.Join(runDir, rundir.DecisionsFile), filters.Layout())
			if err != nil {
				t.Error(err)
			}
			lines = len(ds)
			_, statErr := os.Stat(out)
			outputExisted = statErr == nil
			if len(r.Tasks) != 30 {
				t.Errorf("result has %d tasks, want 30", len(r.Tasks))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || lines != 60 || outputExisted {
		t.Fatalf("AfterStages: %d calls, saw %d decisions (want 60: validate and dedup for 30 tasks), output existed: %v", calls, lines, outputExisted)
	}
	if res == nil || len(res.Kept()) != 25 {
		t.Fatalf("kept %d, want 25", len(res.Kept()))
	}

	calls = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: stages, RunDir: filepath.Join(dir, "run2"), Output: filepath.Join(dir, "out2.parquet"),
		AfterStages: func(*pipeline.Result) { calls++ }})
	if err == nil || calls != 0 {
		t.Fatalf("cancelled run: err %v, %d AfterStages calls (want an error and none)", err, calls)
	}
}

// TestLentBlobsAcrossSlabs: with blobs lent by the parquet reader and
// copied into slabs, a pool whose batches fill a slab before their task
// count (and whose largest blobs get copies of their own) validates every
// task from the right bytes and writes them out unchanged, whether the
// output comes from retained blobs or from a second read of the pool.
func TestLentBlobsAcrossSlabs(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	var rows []rawRow
	want := map[string][32]byte{}
	for i := 0; i < 70; i++ {
		size := 20 << 10 // ~12 KB compressed: ~20 of these fill a slab before 32 tasks do
		if i%10 == 3 {
			size = 150 << 10 // ~88 KB compressed: over slabMaxBlob
		}
		noise := make([]byte, size)
		for j := range noise {
			noise[j] = byte('a' + rng.IntN(26))
		}
		p := fmt.Sprintf("t-%02d", i)
		blob := task(t, fmt.Sprintf("task %d %s", i, noise))
		if big := i%10 == 3; big != (len(blob) > 64<<10) || !big && len(blob) < 10<<10 {
			t.Fatalf("row %d: blob of %d bytes does not exercise what it should", i, len(blob))
		}
		rows = append(rows, rawRow{Path: str(p), Blob: blob})
		want[p] = sha256.Sum256(blob)
	}
	src, stages := validateDedupPool(t, dir, rows)
	if _, ok := src.(pool.Lender); !ok {
		t.Fatal("the parquet source does not lend its blobs: the test covers nothing")
	}
	for _, retain := range []int64{0, -1} {
		sum, out := buildRetaining(t, src, stages, dir, retain)
		if sum.TasksKept != 70 {
			t.Fatalf("retain %d: kept %d of 70", retain, sum.TasksKept)
		}
		got, err := pool.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := got.Each(context.Background(), nil, func(r pool.Record) error {
			n++
			if sha256.Sum256(r.Blob) != want[r.Path] {
				return fmt.Errorf("retain %d: %s differs from the pool's bytes", retain, r.Path)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != 70 {
			t.Fatalf("retain %d: output has %d rows", retain, n)
		}
	}
}

// validateDedupPool writes rows as DIR/pool.parquet and opens it, with the
// validate and dedup stages to run on it.
func validateDedupPool(t *testing.T, dir string, rows []rawRow) (pool.Source, []pipeline.Stage) {
	t.Helper()
	name := filepath.Join(dir, "pool.parquet")
	writeRaw(t, name, rows)
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := filters.Build([]string{"validate", "dedup"}, filters.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return src, stages
}

// buildRetaining runs a build holding up to retain bytes of bundles for
// the output (RetainBlobBytes), into DIR/run<retain> and DIR/out<retain>.parquet.
func buildRetaining(t *testing.T, src pool.Source, stages []pipeline.Stage, dir string, retain int64) (*pipeline.Summary, string) {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("out%d.parquet", retain))
	sum, _, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages,
		RunDir: filepath.Join(dir, fmt.Sprint("run", retain)), Output: out, RetainBlobBytes: retain})
	if err != nil {
		t.Fatal(err)
	}
	return sum, out
}
