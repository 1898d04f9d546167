package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
)

// shardPool mixes good tasks, content duplicates under other paths, a
// duplicate path and undecodable rows.
func shardPool(t *testing.T) string {
	t.Helper()
	var rows []rawRow
	for i := range 120 {
		rows = append(rows, rawRow{Path: str(fmt.Sprintf("task-%03d", i)), Blob: task(t, fmt.Sprintf("task number %d", i%100))})
	}
	rows = append(rows,
		rawRow{Path: str("task-005"), Blob: task(t, "same path again")},
		rawRow{Path: str("t/notgzip"), Blob: []byte("hello")},
		rawRow{Path: str("t/empty"), Blob: []byte{}},
		rawRow{Path: nil, Blob: task(t, "null path")},
	)
	name := filepath.Join(t.TempDir(), "pool.parquet")
	writeRaw(t, name, rows)
	return name
}

func stagesOf(t *testing.T, names []string, target int, seed int64) []pipeline.Stage {
	t.Helper()
	// The test tasks have no solution: lint warns instead of dropping.
	lint, err := filters.ParseLintActions("no_solution=warn")
	if err != nil {
		t.Fatal(err)
	}
	st, err := filters.Build(names, filters.Options{Target: target, Seed: seed, Lint: lint})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestShardsMergeEqualOneRun cuts a pool into 3 shards by content hash,
// runs each, merges, and checks that the kept set, the output bytes, the
// manifest and the decisions equal those of a single run, and that the
// shards are disjoint and cover the pool.
func TestShardsMergeEqualOneRun(t *testing.T) {
	ctx := context.Background()
	name := shardPool(t)
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	static := []string{filters.StageValidate, filters.StageDedup, filters.StageLint}
	dir := t.TempDir()

	one := filepath.Join(dir, "one")
	if _, _, err := pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: stagesOf(t, append(static, filters.StageSelect), 40, 7),
		RunDir: one, Output: filepath.Join(one, "out.parquet"), Workers: 3}); err != nil {
		t.Fatal(err)
	}

	const n = 3
	var dirs []string
	var inShards int64
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("shard%d", i))
		sum, _, err := pipeline.Build(ctx, pipeline.BuildOptions{Source: src, Stages: stagesOf(t, static, 0, 0), RunDir: d,
			Output: filepath.Join(d, "out.parquet"), Workers: 3, Shard: pipeline.Shard{Index: i, Count: n}})
		if err != nil {
			t.Fatal(err)
		}
		if sum.TasksIn == 0 || sum.TasksIn > src.Len()*2/3 {
			t.Errorf("shard %d holds %d of %d tasks (unbalanced)", i, sum.TasksIn, src.Len())
		}
		inShards += sum.TasksIn
		dirs = append(dirs, d)
	}
	if inShards != src.Len() {
		t.Fatalf("shards hold %d tasks, the pool %d", inShards, src.Len())
	}
	merged := filepath.Join(dir, "merged")
	sel := stagesOf(t, []string{filters.StageSelect}, 40, 7)[0].(pipeline.SetStage)
	msum, _, err := pipeline.Merge(ctx, pipeline.MergeOptions{Layout: filters.Layout(), RunDirs: dirs, RunDir: merged, Output: filepath.Join(merged, "out.parquet"),
		Stages: []pipeline.SetStage{sel}})
	if err != nil {
		t.Fatal(err)
	}
	if msum.TasksKept != 40 || msum.TasksIn != src.Len() {
		t.Errorf("merged: %d in, %d kept", msum.TasksIn, msum.TasksKept)
	}

	// Same output, byte for byte, in pool order.
	if a, b := readRows(t, filepath.Join(one, "out.parquet")), readRows(t, filepath.Join(merged, "out.parquet")); !reflect.DeepEqual(a, b) {
		t.Errorf("outputs differ: one run %d rows, merged %d rows", len(a), len(b))
	}
	// Same manifest, apart from per-task seconds.
	stages := append(static, filters.StageSelect)
	ma, err := rundir.ReadManifest(filepath.Join(one, rundir.ManifestFile), stages, filters.Layout())
	if err != nil {
		t.Fatal(err)
	}
	mb, err := rundir.ReadManifest(filepath.Join(merged, rundir.ManifestFile), stages, filters.Layout())
	if err != nil {
		t.Fatal(err)
	}
	strip := func(ts []*pipeline.Task) {
		for _, x := range ts {
			for i := range x.Marks {
				x.Marks[i].Seconds = 0
			}
		}
	}
	strip(ma)
	strip(mb)
	if !reflect.DeepEqual(ma, mb) {
		t.Errorf("manifests differ (%d vs %d rows)", len(ma), len(mb))
		for i := range min(len(ma), len(mb)) {
			if !reflect.DeepEqual(ma[i], mb[i]) {
				t.Errorf("first difference at row %d: %+v vs %+v", i, *ma[i], *mb[i])
				break
			}
		}
	}
	// Same decisions (as a set: a single run interleaves stages).
	key := func(ds []pipeline.Decision) []string {
		var out []string
		for _, d := range ds {
			out = append(out, fmt.Sprintf("%d|%s|%s|%s|%s|%s", d.Index, d.Stage, d.Verdict, d.Reason, d.Detail, d.Hash))
		}
		sort.Strings(out)
		return out
	}
	da, db := key(readDecisions(t, filepath.Join(one, rundir.DecisionsFile))), key(readDecisions(t, filepath.Join(merged, rundir.DecisionsFile)))
	if !reflect.DeepEqual(da, db) {
		t.Errorf("decisions differ: %d vs %d", len(da), len(db))
	}
	// The funnel matches stage by stage.
	var sa pipeline.Summary
	data, _ := os.ReadFile(filepath.Join(one, rundir.SummaryFile))
	if err := json.Unmarshal(data, &sa); err != nil {
		t.Fatal(err)
	}
	for i, f := range sa.Funnel {
		g := msum.Funnel[i]
		if f.Stage != g.Stage || f.In != g.In || f.Kept != g.Kept || f.Dropped != g.Dropped || !reflect.DeepEqual(f.DroppedByReason, g.DroppedByReason) {
			t.Errorf("funnel %s: one run %+v, merged %+v", f.Stage, *f, *g)
		}
	}

	// A missing shard is refused.
	if _, _, err := pipeline.Merge(ctx, pipeline.MergeOptions{Layout: filters.Layout(), RunDirs: dirs[:2], RunDir: filepath.Join(dir, "bad"), Stages: []pipeline.SetStage{sel}}); err == nil {
		t.Error("merge of 2 of 3 shards succeeded")
	}
}

func readRows(t *testing.T, name string) []string {
	t.Helper()
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := src.Each(context.Background(), nil, func(r pool.Record) error {
		out = append(out, fmt.Sprintf("%s %x", r.Path, r.Blob))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseShard(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{{"0/4", true}, {"3/4", true}, {"4/4", false}, {"-1/4", false}, {"1", false}, {"a/b", false}, {"0/0", false}, {"0/1", true}} {
		s, err := rundir.ParseShard(c.in)
		if (err == nil) != c.ok {
			t.Errorf("ParseShard(%q) = %v, %v", c.in, s, err)
		}
	}
}
