package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// testFiles: Upload creates the directory, keeps modes, makes nested
// directories, keeps symlinks, owns everything by root and leaves an
// existing directory's mode alone; Download reads a file (through a
// symlink too), cuts at max, and reports a missing file or directory as
// ErrNotFound, a directory as another error.
func (s *suite) testFiles(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	ctx := context.Background()
	files := []bundle.Entry{
		{Name: "run.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho ran as $(id -un)\n")},
		{Name: "sub", Kind: bundle.KindDir, Mode: 0o750},
		{Name: "sub/data.txt", Kind: bundle.KindFile, Mode: 0o640, Data: []byte("hello data\n")},
		{Name: "deep/er/note.txt", Kind: bundle.KindFile, Mode: 0o600, Data: []byte("note")},
		{Name: "link.txt", Kind: bundle.KindSymlink, Linkname: "sub/data.txt"},
	}
	if err := sb.Upload(ctx, "/up/load", files); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	want := "755 root:root run.sh\n750 root:root sub\n640 root:root sub/data.txt\n600 root:root deep/er/note.txt\n" +
		"755 755\nsymbolic link -> sub/data.txt\n"
	cmd := "cd /up/load && stat -c '%a %U:%G %n' run.sh sub sub/data.txt deep/er/note.txt && " +
		"echo $(stat -c %a deep deep/er) && echo \"$(stat -c %F link.txt) -> $(readlink link.txt)\""
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: cmd}); out != want {
		t.Errorf("after Upload:\n%s\nwant:\n%s", out, want)
	}
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "/up/load/run.sh", User: user}); out != "ran as "+user+"\n" {
		t.Errorf("the uploaded script as %s: %q", user, out)
	}
	// An existing directory keeps its mode.
	if err := sb.Upload(ctx, "/tmp", files[:1]); err != nil {
		t.Fatalf("Upload into /tmp: %v", err)
	}
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "stat -c %a /tmp; cat /tmp/run.sh | wc -l"}); out != "1777\n2\n" {
		t.Errorf("/tmp after an upload into it: %q", out)
	}

	downloads := []struct {
		path string
		max  int64
		want string
	}{
		{"/up/load/sub/data.txt", 1 << 20, "hello data\n"},
		{"/up/load/link.txt", 1 << 20, "hello data\n"},
		{"/up/load/sub/data.txt", 5, "hello"},
		{workdir + "/" + helloFile, 100, "hi\n"},
	}
	for _, d := range downloads {
		if got, err := sb.Download(ctx, d.path, d.max); err != nil || string(got) != d.want {
			t.Errorf("Download(%s, %d) = %q, %v; want %q", d.path, d.max, got, err, d.want)
		}
	}
	for _, p := range []string{"/up/load/missing.txt", "/no/such/dir/file"} {
		if _, err := sb.Download(ctx, p, 10); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("Download(%s): err = %v, want ErrNotFound", p, err)
		}
	}
	if _, err := sb.Download(ctx, "/up/load/sub", 10); err == nil || errors.Is(err, sandbox.ErrNotFound) || sandbox.IsInfra(err) {
		t.Errorf("Download of a directory: err = %v, want a not-a-regular-file error (not ErrNotFound, not infrastructure)", err)
	}
}

// testLogDirs: /logs/{agent,verifier,artifacts} exist, mode 777, owned by
// root, writable by another user.
func (s *suite) testLogDirs(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	want := "777 root /logs/agent\n777 root /logs/verifier\n777 root /logs/artifacts\n"
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "stat -c '%a %U %n' /logs/agent /logs/verifier /logs/artifacts && touch /logs/verifier/x /logs/agent/x /logs/artifacts/x", User: user}); out != want {
		t.Errorf("log dirs: %q, want %q", out, want)
	}
}
