package pool

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/otcurate/otcurate/bundle"
)

// TaskDirSource is a folder of task directories. A task is a directory
// holding instruction.md or task.toml (a multi-step task keeps its
// instructions in steps/<name>/, with task.toml at its root); discovery
// does not descend into a task, like the reference converter, so a step
// folder is never taken for a task. Paths are relative to the root, slash
// separated.
type TaskDirSource struct {
	root  string
	tasks []string // relative paths, sorted
}

// OpenTaskDirs lists the tasks under root. When root itself is a task, the
// pool holds that one task, named by the directory's base name.
func OpenTaskDirs(root string) (*TaskDirSource, error) {
	s := &TaskDirSource{root: root}
	if isTaskDir(root) {
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, err
		}
		s.root = filepath.Dir(abs)
		s.tasks = []string{filepath.Base(abs)}
		return s, nil
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && d.Name()[0] == '.' {
			return filepath.SkipDir
		}
		if isTaskDir(p) {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			s.tasks = append(s.tasks, filepath.ToSlash(rel))
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", root, err)
	}
	if len(s.tasks) == 0 {
		return nil, fmt.Errorf("pool %s: no parquet files and no task directories (a task is a directory holding instruction.md or task.toml)", root)
	}
	sort.Strings(s.tasks)
	return s, nil
}

// taskMarkers are the files that make a directory a task root.
var taskMarkers = []string{"instruction.md", "task.toml"}

func isTaskDir(p string) bool {
	for _, name := range taskMarkers {
		if st, err := os.Stat(filepath.Join(p, name)); err == nil && !st.IsDir() {
			return true
		}
	}
	return false
}

// Len implements Source.
func (s *TaskDirSource) Len() int64 { return int64(len(s.tasks)) }

func (s *TaskDirSource) String() string { return s.root }

// Paths lists the task paths.
func (s *TaskDirSource) Paths() []string { return append([]string(nil), s.tasks...) }

// Each implements Source. A directory that cannot be packed (a FIFO inside,
// a link leaving the tree, unreadable files) becomes a record with Err set.
func (s *TaskDirSource) Each(ctx context.Context, skip func(int64) bool, fn func(Record) error) error {
	for i, rel := range s.tasks {
		if err := ctx.Err(); err != nil {
			return err
		}
		idx := int64(i)
		if skip != nil && skip(idx) {
			continue
		}
		dir := filepath.Join(s.root, filepath.FromSlash(rel))
		rec := Record{Index: idx, Path: rel, originFile: dir, originRow: -1}
		var buf bytes.Buffer
		if err := bundle.EncodeDir(&buf, dir); err != nil {
			rec.Err = err
		} else {
			rec.Blob = buf.Bytes()
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}
