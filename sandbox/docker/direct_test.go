package docker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// TestDirectFilesMatchEngine: uploads and downloads through /proc give
// what the engine's archive path gives (owners, modes, times, nesting,
// symlinks, hard links, missing files, directories), and nothing the
// sandbox plants (absolute symlinks, "..") reaches the host.
func TestDirectFilesMatchEngine(t *testing.T) {
	e := needDocker(t)
	if !e.d.direct() {
		t.Skip("direct file access unavailable (not root, or a remote engine)")
	}
	ctx := context.Background()
	engine, err := New(ctx, Options{RunID: testRunID, EngineFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()

	files := []bundle.Entry{
		{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")},
		{Name: "deep/sub/data.txt", Kind: bundle.KindFile, Mode: 0o600, Data: []byte("data")},
		{Name: "empty", Kind: bundle.KindDir, Mode: 0o700},
		{Name: "link", Kind: bundle.KindSymlink, Linkname: "test.sh"},
		{Name: "deep/hard", Kind: bundle.KindHardlink, Linkname: "deep/sub/data.txt"},
	}
	const list = "cd /up/a/b && find . -mindepth 1 | sort | xargs stat -c '%n %F %a %u:%g %Y %h' && cat deep/hard"
	var views [2]string
	for i, d := range []*Engine{e.d, engine} {
		sb := start(t, d, sandbox.StartSpec{Image: sharedImage(t)})
		if got := sb.(*dockerSandbox).direct != nil; got != (i == 0) {
			t.Fatalf("backend %d: direct = %v", i, got)
		}
		if err := sb.Upload(ctx, "/up/a/b", files); err != nil {
			t.Fatalf("backend %d: upload: %v", i, err)
		}
		res := run(t, sb, sandbox.ExecRequest{Cmd: list})
		if res.ExitCode != 0 {
			t.Fatalf("backend %d: %q %q", i, res.Stdout, res.Stderr)
		}
		views[i] = string(res.Stdout) + "|" + string(run(t, sb, sandbox.ExecRequest{Cmd: "stat -c '%a %u' /up /up/a /up/a/b"}).Stdout)

		run(t, sb, sandbox.ExecRequest{Cmd: "bash /up/a/b/test.sh && ln -s /etc/hostname /logs/verifier/abs && ln -s ../../../../../../etc/hostname /logs/verifier/rel && mkdir /logs/verifier/dir"})
		for p, want := range map[string]string{"/logs/verifier/reward.txt": "1\n", "/up/a/b/link": string(files[0].Data)} {
			got, err := sb.Download(ctx, p, 1<<20)
			if err != nil || string(got) != want {
				t.Errorf("backend %d: download %s = %q, %v", i, p, got, err)
			}
		}
		if got, err := sb.Download(ctx, "/up/a/b/test.sh", 5); err != nil || string(got) != "#!/bi" {
			t.Errorf("backend %d: capped download = %q, %v", i, got, err)
		}
		// Symlinks resolve inside the container: its /etc/hostname (the
		// container ID's prefix), never the host's.
		for _, p := range []string{"/logs/verifier/abs", "/logs/verifier/rel"} {
			got, err := sb.Download(ctx, p, 1<<20)
			if name := strings.TrimSpace(string(got)); err != nil || len(name) < 12 || !strings.HasPrefix(sb.ID(), name) {
				t.Errorf("backend %d: download %s = %q, %v: want the container's hostname", i, p, got, err)
			}
		}
		if _, err := sb.Download(ctx, "/logs/verifier/missing", 10); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("backend %d: missing file: %v", i, err)
		}
		if _, err := sb.Download(ctx, "/logs/verifier/dir", 10); !errors.Is(err, errNotRegular) {
			t.Errorf("backend %d: directory: %v", i, err)
		}
	}
	if views[0] != views[1] {
		t.Errorf("direct and engine uploads differ:\ndirect:\n%s\nengine:\n%s", views[0], views[1])
	}
	t.Logf("upload as seen in the sandbox:\n%s", views[0])
}
