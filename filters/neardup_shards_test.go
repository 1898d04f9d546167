package filters_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/rundir"
)

// TestNearDupAcrossShards: an edited copy whose content hash puts it in
// another shard than its original survives its shard's near_dup, and the
// merge drops it (near_dup_shards), naming the original; a task alone in
// its family stays.
func TestNearDupAcrossShards(t *testing.T) {
	for k := 0; k < 40; k++ {
		copyTask := logTask(logInstrEdited, logTestsEdited)
		copyTask["tests/test.sh"] += fmt.Sprintf("# variant %d\n", k)
		root := writeTaskDirs(t, map[string]map[string]string{
			"a-orig":   logTask(logInstr, logTests),
			"b-copy":   copyTask,
			"c-family": logTask(logInstrHard, logTestsHard),
		})
		src, err := pool.OpenTaskDirs(root)
		if err != nil {
			t.Fatal(err)
		}
		var dirs []string
		shardOf := map[string]int{}
		for i := 0; i < 2; i++ {
			dir := filepath.Join(t.TempDir(), fmt.Sprintf("s%d", i))
			stages, err := filters.Build([]string{"validate", "dedup", "near_dup"}, filters.Options{NearDupSketchDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, RunDir: dir,
				Shard: pipeline.Shard{Index: i, Count: 2}, OnDecision: func(d pipeline.Decision) { shardOf[d.Path] = i }})
			if err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, dir)
		}
		if shardOf["a-orig"] == shardOf["b-copy"] {
			continue // same shard: not the case under test; try another variant
		}
		_, res, err := pipeline.Merge(context.Background(), pipeline.MergeOptions{RunDirs: dirs, RunDir: t.TempDir(),
			Layout: filters.Layout(), Stages: []pipeline.SetStage{filters.NearDupShards{RunDirs: dirs}}})
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, tk := range res.Kept() {
			kept = append(kept, tk.Path)
		}
		if strings.Join(kept, ",") != "a-orig,c-family" {
			t.Errorf("variant %d: merge keeps %v, want a-orig,c-family", k, kept)
		}
		for _, tk := range res.Tasks {
			if m := tk.Marks[len(tk.Marks)-1]; tk.Path == "b-copy" && (m.Stage != filters.StageNearDupShards || m.Reason != filters.ReasonNearDuplicate) {
				t.Errorf("b-copy's last mark: %+v", m)
			}
		}
		return
	}
	t.Fatal("no variant put the copy in another shard than the original")
}

// TestNearDupShardsTemplated: a sharded run of a templated pool (the
// template of TestNearDupTemplatedPool around a short part of each task's
// own): each shard ignores the boilerplate of its slice, the merge that of
// the shards' survivors, so neither drops a distinct task, and the copy of
// the first task, in the other shard, is dropped by the merge.
func TestNearDupShardsTemplated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vocab := strings.Fields("account buffer cache digest event filter graph header index journal key ledger matrix node " +
		"offset packet queue record schema token upload vector window archive batch cursor domain entry frame gauge " +
		"handle image job kernel label metric notice order parcel quota route sample table unit value worker zone")
	word := func() string { return vocab[r.IntN(len(vocab))] }
	method := func(i int) pymMethod {
		name := fmt.Sprintf("%s_%s_%d", word(), word(), i)
		var desc []string
		for k := 0; k < 22; k++ {
			desc = append(desc, word())
		}
		var checks []string
		for k := 0; k < 2; k++ {
			checks = append(checks, fmt.Sprintf("assert obj.%s(%q, %q) == %q", name, word(), word(), word()+"_"+word()))
		}
		return pymMethod{"Service", "Service()", name, "def " + name + "(self, first: str, second: str) -> str",
			"Return the " + strings.Join(desc, " ") + ".", "Service()." + name + "('a', 'b')", "'a_b'", checks}
	}
	// 200 tasks: about 100 a shard, so that each shard has boilerplate.
	const n = 200
	tasks := map[string]map[string]string{}
	var first pymMethod
	for i := 0; i < n; i++ {
		m := method(i)
		if i == 0 {
			first = m
		}
		tasks[fmt.Sprintf("svc-%04d", i)] = pymTask(m, "")
	}
	root := writeTaskDirs(t, tasks)
	// The variant of the copy (a comment in its test.sh) whose content hash
	// puts it in the other shard than its original.
	shardOf := func(dir string) int {
		var buf bytes.Buffer
		if err := bundle.EncodeDir(&buf, dir); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Scan(buf.Bytes(), bundle.DefaultLimits(), bundle.DefaultRetain())
		if err != nil {
			t.Fatal(err)
		}
		if (rundir.Shard{Index: 0, Count: 2}).Has(b.ContentHash, "", nil) {
			return 0
		}
		return 1
	}
	copyTask := pymEdited(first)
	for k := 0; ; k++ {
		copyTask["tests/test.sh"] = pymTestSh + fmt.Sprintf("# variant %d\n", k)
		dir := filepath.Join(t.TempDir(), "svc-9999")
		writeTaskDir(t, dir, copyTask)
		if shardOf(dir) != shardOf(filepath.Join(root, "svc-0000")) {
			break
		}
	}
	writeTaskDir(t, filepath.Join(root, "svc-9999"), copyTask)
	src, err := pool.OpenTaskDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	shardOfPath := map[string]int{}
	for i := 0; i < 2; i++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("s%d", i))
		stages, err := filters.Build([]string{"validate", "near_dup"}, filters.Options{NearDupSketchDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages, RunDir: dir,
			Shard: pipeline.Shard{Index: i, Count: 2}, OnDecision: func(d pipeline.Decision) {
				shardOfPath[d.Path] = i
				if d.Verdict != pipeline.Keep {
					t.Errorf("shard %d: %s %s %s", i, d.Path, d.Reason, d.Detail)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	if shardOfPath["svc-0000"] == shardOfPath["svc-9999"] {
		t.Fatalf("the copy is in the original's shard %d", shardOfPath["svc-0000"])
	}
	merge := &recordingStage{SetStage: filters.NearDupShards{RunDirs: dirs}, details: map[string]string{}}
	_, res, err := pipeline.Merge(context.Background(), pipeline.MergeOptions{RunDirs: dirs, RunDir: t.TempDir(),
		Layout: filters.Layout(), Stages: []pipeline.SetStage{merge}})
	if err != nil {
		t.Fatal(err)
	}
	if kept := len(res.Kept()); kept != n {
		t.Errorf("merge keeps %d tasks, want %d", kept, n)
	}
	for _, tk := range res.Tasks {
		m := tk.Marks[len(tk.Marks)-1]
		switch {
		case tk.Path == "svc-9999":
			if m.Stage != filters.StageNearDupShards || !strings.HasPrefix(merge.details[tk.Path], "near-duplicate of svc-0000: ") {
				t.Errorf("the copy's last mark: %+v %s", m, merge.details[tk.Path])
			}
		case m.Verdict != pipeline.Keep:
			t.Errorf("%s (shard %d): %s %s %s", tk.Path, shardOfPath[tk.Path], m.Stage, m.Reason, merge.details[tk.Path])
		}
	}
}

// recordingStage records the details of a set stage's outcomes by path.
type recordingStage struct {
	pipeline.SetStage
	details map[string]string
}

func (s *recordingStage) Decide(ctx context.Context, tasks []*pipeline.Task) ([]pipeline.Outcome, error) {
	outs, err := s.SetStage.Decide(ctx, tasks)
	for i, o := range outs {
		s.details[tasks[i].Path] = o.Detail
	}
	return outs, err
}

// TestNearDupShardsOldSketch: a sketch file from an older otcurate (v1:
// before near_dup ignored the pool's boilerplate; v2: before the rolled
// shingle hash) is refused, saying to build that shard again.
func TestNearDupShardsOldSketch(t *testing.T) {
	for _, v := range []string{"v1", "v2"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, filters.NearDupSketchFile), []byte("otcurate near_dup sketch "+v+"\n\x00\x00\x00\x00\x00\x00\xe0\x3f"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := filters.NearDupShards{RunDirs: []string{dir}}.Decide(context.Background(), nil)
		if err == nil || !strings.Contains(err.Error(), "build that shard again") {
			t.Errorf("a %s sketch file: %v", v, err)
		}
	}
}
