package filters

import (
	"bytes"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/trial"
)

func packEntries(t *testing.T, entries ...bundle.Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func file(name, data string) bundle.Entry {
	return bundle.Entry{Name: name, Kind: bundle.KindFile, Mode: 0o755, Data: []byte(data)}
}

// TestDecodeSolution: both archive shapes give the same solution/ files;
// what is not a gzip tar holding solve.sh is a clear error.
func TestDecodeSolution(t *testing.T) {
	for _, c := range []struct {
		name  string
		blob  []byte
		files string // solution members, comma-separated
		err   string
	}{
		{"solution dir", packEntries(t, file("solution/solve.sh", "x"), file("solution/lib/a.py", "y")), "solution/lib,solution/lib/a.py,solution/solve.sh", ""},
		{"flat", packEntries(t, file("solve.sh", "x"), file("lib/a.py", "y")), "solution/lib,solution/lib/a.py,solution/solve.sh", ""},
		{"solution dir wins over stray files", packEntries(t, file("README", "r"), file("solution/solve.sh", "x")), "solution/solve.sh", ""},
		{"not gzip", []byte("#!/bin/bash\n"), "", "not_gzip"},
		{"empty", []byte{}, "", "empty"},
		{"no solve.sh", packEntries(t, file("run.sh", "x")), "", "holds no solve.sh"},
		{"solve.sh is a directory", packEntries(t, bundle.Entry{Name: "solve.sh", Kind: bundle.KindDir, Mode: 0o755}, file("solve.sh/x", "x")), "", "holds no solve.sh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sol, err := decodeSolution(c.blob, bundle.Limits{})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range sol.files {
				names = append(names, f.Name)
			}
			if got := strings.Join(names, ","); got != c.files {
				t.Errorf("files %s, want %s", got, c.files)
			}
		})
	}
}

// TestWithSolutionLeavesTheTaskAlone: the task run with a supplied
// solution has it as solution/ (replacing a stray solution/ without
// solve.sh), and the task's own bundle and info are unchanged.
func TestWithSolutionLeavesTheTaskAlone(t *testing.T) {
	blob := packEntries(t, file("instruction.md", "Do it.\n"), file("task.toml", ""), file("environment/Dockerfile", "FROM debian:bookworm\n"),
		file("tests/test.sh", "#!/bin/bash\n"), file("solution/notes.txt", "no solve.sh here"))
	task, err := trial.LoadTask("t", blob, bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if task.Info.HasSolution {
		t.Fatal("the fixture has a solution")
	}
	names := strings.Join(task.Bundle.Names, ",")
	sol, err := decodeSolution(packEntries(t, file("solve.sh", "#!/bin/bash\ntouch /app/done\n")), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	with := withSolution(task, sol)
	if !with.Info.HasSolution || task.Info.HasSolution {
		t.Errorf("HasSolution: with %v, original %v", with.Info.HasSolution, task.Info.HasSolution)
	}
	if got := strings.Join(task.Bundle.Names, ","); got != names {
		t.Errorf("the original bundle changed: %s, was %s", got, names)
	}
	entries, err := with.Bundle.Entries("solution")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name != "solve.sh" || !bytes.HasPrefix(entries[0].Data, []byte("#!")) {
		t.Errorf("solution entries %+v, want solve.sh alone", entries)
	}
	if _, ok := with.Bundle.Data("solution/solve.sh"); !ok {
		t.Error("solution/solve.sh is not readable from the bundle")
	}
}
