package filters_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
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
