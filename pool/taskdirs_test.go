package pool_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/otcurate/otcurate/pool"
)

// TestMultiStepTaskIsOneTask: a multi-step task (task.toml at its root, no
// root instruction.md, instructions in steps/<name>/) is found at its root,
// once, whether the pool folder or the task itself is given; its step
// folders are never tasks (issue 22: a step was packed and the root lost).
func TestMultiStepTaskIsOneTask(t *testing.T) {
	const dir = "../testdata/multi-step"
	want := []string{"ledger-two-milestones"}
	for _, spec := range []string{dir, filepath.Join(dir, "ledger-two-milestones")} {
		s, err := pool.OpenTaskDirs(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Paths(); !reflect.DeepEqual(got, want) {
			t.Errorf("OpenTaskDirs(%s) = %v, want %v", spec, got, want)
		}
	}
	src, err := pool.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := src.(*pool.TaskDirSource); !ok || !reflect.DeepEqual(s.Paths(), want) {
		t.Errorf("Open(%s) = %T %v, want a folder of tasks %v", dir, src, src, want)
	}
}

// TestTaskDataParquetIsNotAShard: a .parquet data file inside a task (here
// under environment/, walked before instruction.md) does not make a
// folder of tasks a folder of shards.
func TestTaskDataParquetIsNotAShard(t *testing.T) {
	root := t.TempDir()
	for name, data := range map[string]string{
		"a/instruction.md":             "do it\n",
		"a/task.toml":                  "version = \"1.0\"\n",
		"a/environment/data/x.parquet": "not a dataset\n",
		"b/instruction.md":             "do it too\n",
		"b/environment/Dockerfile":     "FROM alpine\n",
		"c/task.toml":                  "version = \"2.0\"\n",
		"c/steps/one/instruction.md":   "step one\n",
		"c/steps/one/tests/test.sh":    "exit 0\n",
		"c/environment/data/y.parquet": "not a dataset either\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, spec := range []string{root, filepath.Join(root, "a")} {
		src, err := pool.Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		s, ok := src.(*pool.TaskDirSource)
		if !ok {
			t.Fatalf("Open(%s) = %T, want a folder of tasks", spec, src)
		}
		if spec == root && !reflect.DeepEqual(s.Paths(), []string{"a", "b", "c"}) {
			t.Errorf("tasks %v, want [a b c]", s.Paths())
		}
	}
}
