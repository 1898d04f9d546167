package bundle

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

func inflateAll(t *testing.T, blob []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// appendTask packs a solution-less task, one member with a PAX header
// (a name over 100 bytes), and extra members.
func appendTask(t *testing.T, extra ...Entry) []byte {
	t.Helper()
	long := "environment/" + strings.Repeat("d", 95) + "/data.txt"
	entries := append([]Entry{
		{Name: "instruction.md", Kind: KindFile, Mode: 0o644, Data: []byte("Fix the method.\n")},
		{Name: "task.toml", Kind: KindFile, Mode: 0o644, Data: []byte("schema_version = \"1.1\"\n")},
		{Name: "environment/Dockerfile", Kind: KindFile, Mode: 0o644, Data: []byte("FROM debian:bookworm\n")},
		{Name: long, Kind: KindFile, Mode: 0o600, Data: bytes.Repeat([]byte("x"), 1000)},
		{Name: "tests/test.sh", Kind: KindFile, Mode: 0o755, Data: []byte("echo 1 > /logs/verifier/reward.txt\n")},
	}, extra...)
	var buf bytes.Buffer
	if err := Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAppendSolution: a solution appended to a solution-less task makes a
// bundle that decodes and validates with a solution, whose original
// members are the same tar bytes, and whose new files have their content
// and modes.
func TestAppendSolution(t *testing.T) {
	solve := Entry{Name: "solution/solve.sh", Kind: KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho fixed\n")}
	helper := Entry{Name: "solution/lib/patch.py", Kind: KindFile, Mode: 0o644, Data: []byte("print(1)\n")}
	cases := []struct {
		name    string
		task    []byte
		add     []Entry
		members int // members added, parent directories included
		wantErr string
	}{
		{"solve.sh and a helper in a subdirectory", appendTask(t), []Entry{solve, helper}, 4, ""},
		{"into an existing solution/ without solve.sh", appendTask(t, Entry{Name: "solution/README", Kind: KindFile, Mode: 0o644, Data: []byte("todo")}), []Entry{solve}, 1, ""},
		{"a member already there", appendTask(t), []Entry{{Name: "tests/test.sh", Kind: KindFile, Mode: 0o755, Data: []byte("exit 0")}}, 0, "tests/test.sh is already in the archive"},
		{"a file where the archive has a directory", appendTask(t), []Entry{{Name: "environment", Kind: KindFile, Mode: 0o644, Data: []byte("x")}}, 0, "environment is already in the archive"},
		{"under a file of the archive", appendTask(t), []Entry{{Name: "task.toml/x", Kind: KindFile, Mode: 0o644, Data: []byte("x")}}, 0, "task.toml is already in the archive"},
		{"not gzip", []byte("plain"), []Entry{solve}, 0, "not gzip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Append(c.task, Limits{}, c.add)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			before, after := inflateAll(t, c.task), inflateAll(t, out)
			end, _, err := tarEnd(before)
			if err != nil {
				t.Fatal(err)
			}
			if end == 0 || !bytes.Equal(after[:end], before[:end]) {
				t.Errorf("the original members' tar bytes changed (end %d)", end)
			}
			b, err := Scan(out, DefaultLimits(), RetainAll(DefaultLimits()))
			if err != nil {
				t.Fatal(err)
			}
			info, err := Validate(b)
			if err != nil {
				t.Fatal(err)
			}
			if !info.HasSolution {
				t.Error("the appended bundle has no solution")
			}
			orig, err := Scan(c.task, DefaultLimits(), RetainAll(DefaultLimits()))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range orig.Names {
				if o, a := orig.Files[n], b.Files[n]; a == nil || o.Digest != a.Digest || o.Mode != a.Mode || o.Kind != a.Kind {
					t.Errorf("%s changed: %+v → %+v", n, o, a)
				}
			}
			for _, e := range c.add {
				f := b.Files[e.Name]
				if f == nil || !bytes.Equal(f.Data, e.Data) || f.Mode != e.Mode {
					t.Errorf("%s: %+v, want mode %v and its data", e.Name, f, e.Mode)
				}
			}
			if len(b.Names) != len(orig.Names)+c.members {
				t.Errorf("members %v after appending %d to %v", b.Names, len(c.add), orig.Names)
			}
		})
	}
}

// TestAppendDotSlashArchive: real pools are often packed from inside the
// task directory ("./" before every name, "./" itself a member, mtimes
// and owners of the packer). Append sees those names as the clean paths
// they are: a solution is added beside them, and one that would replace
// a "./solution/..." member is refused.
func TestAppendDotSlashArchive(t *testing.T) {
	task := rawTarGz(t,
		member{name: "./", typ: '5', mode: 0o755},
		member{name: "./instruction.md", data: "Fix the method.\n"},
		member{name: "./task.toml", data: "schema_version = \"1.1\"\n"},
		member{name: "./environment/", typ: '5', mode: 0o755},
		member{name: "./environment/Dockerfile", data: "FROM debian:bookworm\n"},
		member{name: "./tests/test.sh", mode: 0o755, data: "echo 1 > /logs/verifier/reward.txt\n"},
		member{name: "./solution/", typ: '5', mode: 0o755},
		member{name: "./solution/README.md", data: "Put your answer here.\n"},
	)
	solve := Entry{Name: "solution/solve.sh", Kind: KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho fixed\n")}
	out, err := Append(task, Limits{}, []Entry{solve})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Scan(out, DefaultLimits(), RetainAll(DefaultLimits()))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := Validate(b); err != nil || !info.HasSolution {
		t.Fatalf("validates %v, has solution %v", err, info != nil && info.HasSolution)
	}
	if data, _ := b.Data("solution/README.md"); string(data) != "Put your answer here.\n" {
		t.Errorf("solution/README.md %q", data)
	}
	before, after := inflateAll(t, task), inflateAll(t, out)
	end, _, err := tarEnd(before)
	if err != nil || end == 0 || !bytes.Equal(after[:end], before[:end]) {
		t.Errorf("the original members' tar bytes changed (end %d, %v)", end, err)
	}
	for _, e := range []Entry{
		{Name: "solution/README.md", Kind: KindFile, Mode: 0o644, Data: []byte("mine\n")},
		{Name: "tests/test.sh", Kind: KindFile, Mode: 0o755, Data: []byte("exit 0\n")},
	} {
		if _, err := Append(task, Limits{}, []Entry{solve, e}); err == nil || !strings.Contains(err.Error(), e.Name+" is already in the archive") {
			t.Errorf("appending %s over ./%s: %v", e.Name, e.Name, err)
		}
	}
}
