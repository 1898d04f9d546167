package filters_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pool"
)

// realTask packs a solution-less task the way real pools ship them, with
// extra members (folders named solution that are not an oracle).
func realTask(t *testing.T, tag string, extra ...bundle.Entry) []byte {
	t.Helper()
	entries := append([]bundle.Entry{
		{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("Serve the site (" + tag + ").\n")},
		{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("[verifier]\ntimeout_sec = 30\n[agent]\ntimeout_sec = 30\n")},
		{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644,
			Data: []byte("FROM debian:bookworm\nCOPY solution/nginx.conf /solution/nginx.conf\n")},
		{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(gateCheck)},
	}, extra...)
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAttachSolutionsRealPoolSolutionFolders: --attach-solutions on tasks
// whose `solution` folders are not an oracle (real pools: config copied
// into the image from environment/solution/, a top-level solution/README.md
// without solve.sh, a file named solution). The proving solution is added
// as solution/ only where no member of the task is overwritten: every
// original member keeps its bytes, and a task where the solution would
// replace a member (or sit under a file) is written byte for byte as it
// was and named in Missed (the CLI's warning), never half-attached.
func TestAttachSolutionsRealPoolSolutionFolders(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	file := func(name, data string, mode os.FileMode) bundle.Entry {
		return bundle.Entry{Name: name, Kind: bundle.KindFile, Mode: mode, Data: []byte(data)}
	}
	envSol := []bundle.Entry{file("environment/solution/nginx.conf", "server { listen 80; }\n", 0o644),
		file("environment/solution/solve.sh", "#!/bin/bash\necho not-the-oracle\n", 0o755)}
	readme := file("solution/README.md", "Write your answer here.\n", 0o644)
	rows := []gateRow{
		{Path: "policy-envsol", Task: realTask(t, "envsol", envSol...)},
		{Path: "policy-readme", Task: realTask(t, "readme", readme)},
		{Path: "supplied-clash", Task: realTask(t, "clash", readme)},
		{Path: "supplied-file", Task: realTask(t, "file", file("solution", "42\n", 0o644))},
	}
	name := filepath.Join(dir, "pool.parquet")
	writeGatePool(t, name, rows)
	put := func(d string, files map[string]string) {
		t.Helper()
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, body := range files {
			if err := os.WriteFile(filepath.Join(d, n), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	store := filepath.Join(runDir, filters.SolutionStore)
	storeSolve := "#!/bin/bash\necho from-store\n"
	for _, i := range []int{0, 1} {
		put(filepath.Join(store, filters.SolutionDirName(rows[i].Task), filters.SolutionSubdir), map[string]string{"solve.sh": storeSolve})
	}
	sols := filepath.Join(dir, "sols")
	put(filepath.Join(sols, "supplied-clash", "solution"), map[string]string{"solve.sh": "#!/bin/bash\necho clash\n", "README.md": "mine\n"})
	put(filepath.Join(sols, "supplied-file", "solution"), map[string]string{"solve.sh": "#!/bin/bash\necho file\n"})

	out := filepath.Join(dir, "out.parquet")
	att := &filters.SolutionAttacher{Solutions: filters.Solutions{Dir: sols, Store: store}}
	sum := buildAttaching(t, name, runDir, out, att)
	if sum.TasksKept != int64(len(rows)) {
		t.Fatalf("kept %d, want %d", sum.TasksKept, len(rows))
	}
	orig := map[string][]byte{}
	for _, r := range rows {
		orig[r.Path] = r.Task
	}
	attached := map[string]bool{"policy-envsol": true, "policy-readme": true}
	outSrc, err := pool.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := outSrc.Each(context.Background(), nil, func(rec pool.Record) error {
		n++
		if !attached[rec.Path] {
			if !bytes.Equal(rec.Blob, orig[rec.Path]) {
				t.Errorf("%s: its solution could not be attached without overwriting a member, yet its bytes changed", rec.Path)
			}
			return nil
		}
		lim := bundle.DefaultLimits()
		b, err := bundle.Scan(rec.Blob, lim, bundle.RetainAll(lim))
		if err != nil {
			t.Fatalf("%s: %v", rec.Path, err)
		}
		if info, err := bundle.Validate(b); err != nil || !info.HasSolution {
			t.Errorf("%s: validates %v, has an oracle %v", rec.Path, err, info != nil && info.HasSolution)
		}
		if data, _ := b.Data("solution/solve.sh"); string(data) != storeSolve {
			t.Errorf("%s: solution/solve.sh %q, want the stored one", rec.Path, data)
		}
		before, err := bundle.Scan(orig[rec.Path], lim, bundle.RetainAll(lim))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range before.Names {
			o, a := before.Files[m], b.Files[m]
			if a == nil || a.Digest != o.Digest || a.Mode != o.Mode || a.Kind != o.Kind {
				t.Errorf("%s: member %s changed by the attach: %+v → %+v", rec.Path, m, o, a)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(rows) {
		t.Errorf("output holds %d rows, want %d", n, len(rows))
	}
	if got := strings.Join(att.Attached(), ","); got != "policy-envsol,policy-readme" {
		t.Errorf("attached %q", got)
	}
	missed := att.Missed()
	if len(missed) != 2 || !strings.HasPrefix(missed[0], "supplied-clash: ") || !strings.Contains(missed[0], "solution/README.md is already in the archive") ||
		!strings.HasPrefix(missed[1], "supplied-file: ") || !strings.Contains(missed[1], "solution is already in the archive") {
		t.Errorf("missed %q, want supplied-clash (solution/README.md) and supplied-file (solution) named with why", missed)
	}
}
