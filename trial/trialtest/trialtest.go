// Package trialtest builds tasks for the tests of backends and the trial
// runner: a task directory given as a map, packed and loaded like a pool
// row.
package trialtest

import (
	"bytes"
	"io/fs"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/trial"
)

// Task packs files (path → content; *.sh files are executable) as a task
// named name and loads it.
func Task(t testing.TB, name string, files map[string]string) *trial.Task {
	t.Helper()
	entries := make([]bundle.Entry, 0, len(files))
	for p, data := range files {
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		entries = append(entries, bundle.Entry{Name: p, Kind: bundle.KindFile, Mode: mode, Data: []byte(data)})
	}
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil { // sorts the members
		t.Fatal(err)
	}
	task, err := trial.LoadTask(name, buf.Bytes(), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// EnvFiles is the task's environment/ directory, the build context a
// backend's Build takes.
func EnvFiles(t testing.TB, task *trial.Task) []bundle.Entry {
	t.Helper()
	files, err := task.Bundle.Entries("environment")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// DoneTask is the backends' standard test task: the instruction asks for
// /app/done, tests/expected.txt holds "done", and the caller gives the
// task.toml, Dockerfile, test.sh and solve.sh.
func DoneTask(t testing.TB, name, taskToml, dockerfile, test, solve string) *trial.Task {
	return Task(t, name, map[string]string{
		"instruction.md":         "create /app/done (" + name + ")\n",
		"task.toml":              taskToml,
		"environment/Dockerfile": dockerfile,
		"tests/test.sh":          test,
		"tests/expected.txt":     "done\n",
		"solution/solve.sh":      solve,
	})
}
