package docker

import (
	"context"
	"errors"
	"github.com/otcurate/otcurate/sandbox"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
)

// TestIsolation: KillAll, ReadFile, ResetDir and NetAttempts on both Docker
// paths (host-side, and the shell fallback of a remote engine).
func TestIsolation(t *testing.T) {
	e := needDocker(t)
	ctx := context.Background()
	engine, err := New(ctx, Options{RunID: testRunID, EngineFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	backends := map[string]*Engine{"engine": engine}
	if e.d.direct() {
		backends["direct"] = e.d
	}
	for name, d := range backends {
		t.Run(name, func(t *testing.T) {
			sb := start(t, d, sandbox.StartSpec{Image: sharedImage(t)})
			// A service up before Start returned survives KillAll.
			// Builtins only (mapfile, not tr): the forking daemon below
			// can fill the container's pid limit, and a listing that
			// forks then misses processes.
			ps := func() string {
				return string(run(t, sb, sandbox.ExecRequest{Cmd: `for d in /proc/[0-9]*; do [ "${d##*/}" = $$ ] || { mapfile -d '' a < $d/cmdline && echo "${a[*]}"; } 2>/dev/null; done`, User: "root"}).Stdout)
			}
			before := ps()
			// A stopped process (stopped once it is sleep, not between
			// fork and exec), then a daemon without the exec marker,
			// renamed, that forks continuously (started last: it can
			// fill the container's pid limit).
			run(t, sb, sandbox.ExecRequest{Cmd: `sleep 78 & p=$!; for i in $(seq 500); do mapfile -d '' a < /proc/$p/cmdline; [ "${a[*]}" = "sleep 78" ] && break; sleep 0.01; done; kill -STOP $p
env -i setsid nohup bash -c 'exec -a kworker/agent bash -c "while :; do (sleep 77 &); done"' >/dev/null 2>&1 &
sleep 0.5`})
			if got := ps(); !strings.Contains(got, "sleep 77") || !strings.Contains(got, "sleep 78") {
				t.Fatalf("the agent's processes did not start:\n%s", got)
			}
			if err := sb.KillAll(ctx); err != nil {
				t.Fatalf("KillAll: %v", err)
			}
			after := ps()
			if strings.Contains(after, "sleep 7") || strings.Contains(after, "kworker") {
				t.Errorf("processes survive KillAll:\n%s", after)
			}
			if !strings.Contains(after, "sleep infinity") {
				t.Errorf("KillAll killed the main process:\nbefore:\n%s\nafter:\n%s", before, after)
			}

			// ReadFile: only regular files reached without symlinks.
			run(t, sb, sandbox.ExecRequest{Cmd: `mkdir -p /r/dir && printf 0123456789 > /r/file && mkfifo /r/fifo &&
ln -s /r/file /r/link && ln -s /r /rl`, User: "root"})
			for p, want := range map[string]error{"/r/dir": sandbox.ErrNotRegular, "/r/fifo": sandbox.ErrNotRegular, "/dev/null": sandbox.ErrNotRegular,
				"/r/link": sandbox.ErrNotRegular, "/rl/file": sandbox.ErrNotRegular, "/r/missing": sandbox.ErrNotFound} {
				if _, err := sb.ReadFile(ctx, p, 100, false); !errors.Is(err, want) {
					t.Errorf("ReadFile %s: %v, want %v", p, err, want)
				}
			}
			if got, err := sb.ReadFile(ctx, "/r/file", 4, false); err != nil || string(got) != "0123" {
				t.Errorf("ReadFile head = %q, %v", got, err)
			}
			if got, err := sb.ReadFile(ctx, "/r/file", 4, true); err != nil || string(got) != "6789" {
				t.Errorf("ReadFile tail = %q, %v", got, err)
			}

			// ResetDir: a tree, a symlink in it and a symlink in its
			// place are removed, never followed.
			run(t, sb, sandbox.ExecRequest{Cmd: `mkdir -p /keep /t/a/b && echo k > /keep/k && echo old > /t/a/b/old && ln -s /keep /t/a/esc && ln -s /keep /u`, User: "root"})
			files := []bundle.Entry{{Name: "new.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("x")}}
			// Parents that are a file or a symlink are replaced, not
			// followed or failed on.
			run(t, sb, sandbox.ExecRequest{Cmd: `touch /pf && ln -s /keep /pl`, User: "root"})
			for _, dir := range []string{"/t", "/u", "/v/w", "/pf/d", "/pl/d"} {
				if err := sb.ResetDir(ctx, dir, 0o777, files); err != nil {
					t.Fatalf("ResetDir %s: %v", dir, err)
				}
				out := run(t, sb, sandbox.ExecRequest{Cmd: "stat -c '%F %a %u' " + dir + " && ls -A " + dir + " && ls -A /keep", User: "root"})
				if got := string(out.Stdout); got != "directory 777 0\nnew.sh\nk\n" {
					t.Errorf("after ResetDir %s: %q %s", dir, got, out.Stderr)
				}
			}
			if err := sb.ResetDir(ctx, "/", 0o755, nil); err == nil {
				t.Error("ResetDir / accepted")
			}

			// NetAttempts: a name lookup without a network is an attempt.
			n0, ok, err := sb.NetAttempts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			run(t, sb, sandbox.ExecRequest{Cmd: "getent hosts example.com; true"})
			n1, ok1, err := sb.NetAttempts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (name == "direct") || ok1 != ok || (ok && n1 <= n0) {
				t.Errorf("NetAttempts %d (%v) -> %d (%v)", n0, ok, n1, ok1)
			}
		})
	}
}

// TestKillAllExited: a sandbox whose main process the agent killed is an
// *sandbox.ExitedError, not an infrastructure failure.
func TestKillAllExited(t *testing.T) {
	e := needDocker(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t)})
	run(t, sb, sandbox.ExecRequest{Cmd: "kill -9 -1", User: "root"})
	err := sb.KillAll(context.Background())
	var ee *sandbox.ExitedError
	if !errors.As(err, &ee) || sandbox.IsInfra(err) {
		t.Fatalf("KillAll after kill -9 -1: %v (%T), want an *sandbox.ExitedError", err, err)
	}
}
