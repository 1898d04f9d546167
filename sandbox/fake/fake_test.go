package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// newBackend is a fake backend on a fresh state directory (the test runs
// in parallel with the others), closed and
// checked for leftovers at the end of the test. Without root the test is
// skipped (OTCURATE_REQUIRE_FAKE=1 makes that a failure).
func newBackend(t *testing.T) *Backend {
	t.Helper()
	t.Parallel()
	return newSerialBackend(t)
}

// newSerialBackend is newBackend for a test that must not run in
// parallel with the others (it changes process-wide state).
func newSerialBackend(t *testing.T) *Backend {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("OTCURATE_REQUIRE_FAKE") == "1" {
			t.Fatal("the fake sandbox backend needs root")
		}
		t.Skip("the fake sandbox backend needs root")
	}
	b, err := New(Options{RunID: "test-" + t.Name(), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		left, err := b.Sandboxes(b.runID)
		if err != nil {
			t.Error(err)
		}
		if len(left) > 0 {
			t.Errorf("sandboxes left behind: %v", left)
		}
	})
	return b
}

// env makes an environment from a Dockerfile and extra context files.
func env(dockerfile string, files ...bundle.Entry) sandbox.Environment {
	files = append([]bundle.Entry{{Name: "Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(dockerfile)}}, files...)
	h := sha256.New()
	for _, f := range files {
		h.Write([]byte(f.Name + "\x00" + string(f.Data) + "\x00" + f.Linkname + "\x00" + f.Mode.String()))
	}
	return sandbox.Environment{Hash: hex.EncodeToString(h.Sum(nil)), Files: files, BuildTimeout: time.Minute, Task: "test"}
}

func file(name, data string, mode fs.FileMode) bundle.Entry {
	return bundle.Entry{Name: name, Kind: bundle.KindFile, Mode: mode, Data: []byte(data)}
}

// start builds a Dockerfile and starts a sandbox, stopped at the end.
func start(t *testing.T, b *Backend, dockerfile string, files ...bundle.Entry) sandbox.Sandbox {
	t.Helper()
	ctx := context.Background()
	img, err := b.Build(ctx, env(dockerfile, files...))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return sb
}

func run(t *testing.T, sb sandbox.Sandbox, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	res, err := sb.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("exec %q: %v", req.Cmd, err)
	}
	return res
}

func TestBuildAndExec(t *testing.T) {
	b := newBackend(t)
	sb := start(t, b, `FROM debian:bookworm
ARG GREETING=hello
ENV APP_HOME=/app \
    MODE="fast mode"
WORKDIR $APP_HOME
COPY data/ ./data/
COPY run.sh /usr/local/bin/
RUN useradd -m -u 1234 agent && echo "$GREETING" > /app/greeting && mkdir /app/out && chown agent /app/out
USER agent
`, file("data/a.txt", "A\n", 0o640), file("data/sub/b.txt", "B\n", 0o600), file("run.sh", "#!/bin/sh\necho ran\n", 0o755))

	tests := []struct {
		name string
		req  sandbox.ExecRequest
		code int
		out  string
	}{
		{"workdir", sandbox.ExecRequest{Cmd: "pwd"}, 0, "/app\n"},
		{"image user", sandbox.ExecRequest{Cmd: "id -un; echo $HOME"}, 0, "agent\n/home/agent\n"},
		{"root", sandbox.ExecRequest{Cmd: "id -u; echo $HOME", User: "root"}, 0, "0\n/root\n"},
		{"numeric user", sandbox.ExecRequest{Cmd: "id -u; id -g", User: "4321:99"}, 0, "4321\n99\n"},
		{"image env", sandbox.ExecRequest{Cmd: `echo "$APP_HOME|$MODE|${GREETING-unset}"`}, 0, "/app|fast mode|unset\n"},
		{"request env", sandbox.ExecRequest{Cmd: `echo "$MODE"`, Env: map[string]string{"MODE": "slow"}}, 0, "slow\n"},
		{"request workdir", sandbox.ExecRequest{Cmd: "pwd", Workdir: "/tmp"}, 0, "/tmp\n"},
		{"exit code", sandbox.ExecRequest{Cmd: "exit 3"}, 3, ""},
		{"copied files", sandbox.ExecRequest{Cmd: "cat data/a.txt data/sub/b.txt greeting; stat -c '%a %U' data/a.txt data/sub/b.txt", User: "root"}, 0, "A\nB\nhello\n640 root\n600 root\n"},
		{"copied into a directory", sandbox.ExecRequest{Cmd: "run.sh"}, 0, "ran\n"},
		{"user owns its dir", sandbox.ExecRequest{Cmd: "touch /app/out/x && ! touch /app/y 2>/dev/null && echo ok"}, 0, "ok\n"},
		{"private /tmp", sandbox.ExecRequest{Cmd: "ls -A /tmp | wc -l; stat -c %a /tmp"}, 0, "0\n1777\n"},
		{"log dirs", sandbox.ExecRequest{Cmd: "stat -c '%a %n' /logs/agent /logs/verifier /logs/artifacts"}, 0, "777 /logs/agent\n777 /logs/verifier\n777 /logs/artifacts\n"},
		{"no network", sandbox.ExecRequest{Cmd: "ls /sys/class/net"}, 0, "lo\n"},
		{"pid namespace", sandbox.ExecRequest{Cmd: "cat /proc/1/comm"}, 0, "bash\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, sb, tc.req)
			if res.ExitCode != tc.code || string(res.Stdout) != tc.out {
				t.Errorf("exit %d stdout %q stderr %q; want exit %d stdout %q", res.ExitCode, res.Stdout, res.Stderr, tc.code, tc.out)
			}
		})
	}
}

func TestExecStartFailures(t *testing.T) {
	b := newBackend(t)
	sb := start(t, b, "FROM debian:bookworm\n")
	for _, req := range []sandbox.ExecRequest{
		{Cmd: "true", User: "nobody-here"},
		{Cmd: "true", Workdir: "/does/not/exist"},
	} {
		res := run(t, sb, req)
		if res.ExitCode != 126 || len(res.Stderr) == 0 {
			t.Errorf("%+v: exit %d stderr %q; want 126 and a message", req, res.ExitCode, res.Stderr)
		}
	}
}

func TestExecTimeoutKillsTree(t *testing.T) {
	b := newBackend(t)
	sb := start(t, b, "FROM debian:bookworm\n")
	for _, user := range []string{"root", "nobody"} {
		t.Run(user, func(t *testing.T) {
			start := time.Now()
			res := run(t, sb, sandbox.ExecRequest{User: user, Timeout: 500 * time.Millisecond,
				Cmd: "(setsid sleep 300 & sleep 300 & wait) ; echo never"})
			if !res.TimedOut || time.Since(start) > 5*time.Second {
				t.Fatalf("timed out %v after %s", res.TimedOut, time.Since(start))
			}
			check := run(t, sb, sandbox.ExecRequest{Cmd: "pgrep -a -x sleep | grep -c ' 300$' || true", User: "root"})
			if got := strings.TrimSpace(string(check.Stdout)); got != "0" {
				t.Errorf("%s sleep processes survive the timeout", got)
			}
		})
	}
}

func TestOutputCapped(t *testing.T) {
	b := newBackend(t)
	sb := start(t, b, "FROM debian:bookworm\n")
	res := run(t, sb, sandbox.ExecRequest{Cmd: "echo start; head -c 100000 /dev/zero | tr '\\0' x; echo; echo end", MaxOutput: 100})
	if !res.Truncated || len(res.Stdout) != 100 || !strings.HasPrefix(string(res.Stdout), "start") || !strings.HasSuffix(string(res.Stdout), "end\n") {
		t.Errorf("truncated %v, %d bytes: %q", res.Truncated, len(res.Stdout), res.Stdout)
	}
}

func TestUploadDownload(t *testing.T) {
	b := newBackend(t)
	sb := start(t, b, "FROM debian:bookworm\n")
	ctx := context.Background()
	files := []bundle.Entry{
		file("test.sh", "#!/bin/bash\necho hi\n", 0o755),
		file("sub/data.txt", "secret", 0o600),
		{Name: "link", Kind: bundle.KindSymlink, Linkname: "sub/data.txt"},
		{Name: "empty", Kind: bundle.KindDir, Mode: fs.ModeDir | 0o700},
	}
	if err := sb.Upload(ctx, "/tests", files); err != nil {
		t.Fatal(err)
	}
	res := run(t, sb, sandbox.ExecRequest{Cmd: "stat -c '%a %U %F %n' /tests/test.sh /tests/sub/data.txt /tests/empty; readlink /tests/link; /tests/test.sh", User: "root"})
	want := "755 root regular file /tests/test.sh\n600 root regular file /tests/sub/data.txt\n700 root directory /tests/empty\nsub/data.txt\nhi\n"
	if string(res.Stdout) != want {
		t.Errorf("got %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
	for _, tc := range []struct {
		path string
		max  int64
		want string
		err  error
	}{
		{"/tests/sub/data.txt", 0, "secret", nil},
		{"/tests/link", 0, "secret", nil},
		{"/tests/sub/data.txt", 3, "sec", nil},
		{"/tests/missing", 0, "", sandbox.ErrNotFound},
	} {
		got, err := sb.Download(ctx, tc.path, tc.max)
		if (tc.err == nil) != (err == nil) || (tc.err != nil && !errors.Is(err, tc.err)) || string(got) != tc.want {
			t.Errorf("download %s: %q, %v; want %q, %v", tc.path, got, err, tc.want, tc.err)
		}
	}
	if _, err := sb.Download(ctx, "/tests", 0); err == nil {
		t.Error("download of a directory succeeded")
	}
	run(t, sb, sandbox.ExecRequest{Cmd: "echo 1 > /logs/verifier/reward.txt", User: "nobody"})
	if got, err := sb.Download(ctx, "/logs/verifier/reward.txt", 0); err != nil || string(got) != "1\n" {
		t.Errorf("reward: %q, %v", got, err)
	}
}

func TestTerminal(t *testing.T) {
	b := newBackend(t)
	sb := start(t, b, "FROM debian:bookworm\nWORKDIR /work\n")
	term, err := sb.OpenTerminal(context.Background(), sandbox.TerminalSpec{Env: map[string]string{"PS1": "$ "}})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1)
	go func() {
		var buf []byte
		p := make([]byte, 4096)
		for {
			n, err := term.Read(p)
			buf = append(buf, p[:n]...)
			if err != nil {
				out <- string(buf)
				return
			}
		}
	}()
	if _, err := term.Write([]byte("tty; pwd; stty size; echo done-$((6*7))\nexit\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-out:
		for _, want := range []string{"/dev/pts/", "/work", "40 160", "done-42"} {
			if !strings.Contains(got, want) {
				t.Errorf("terminal output lacks %q:\n%s", want, got)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the terminal did not end after exit")
	}
	if err := term.Close(); err != nil {
		t.Fatal(err)
	}

	// Close ends a Read blocked on the terminal.
	term, err = sb.OpenTerminal(context.Background(), sandbox.TerminalSpec{})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		p := make([]byte, 4096)
		for {
			if _, err := term.Read(p); err != nil {
				close(ended)
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := term.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("a Read still blocks 10 s after Close")
	}
}

func TestStopKillsEverything(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	img, err := b.Build(ctx, env("FROM debian:bookworm\n"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	run(t, sb, sandbox.ExecRequest{Cmd: "nohup setsid sleep 1000 >/dev/null 2>&1 & echo started"})
	term, err := sb.OpenTerminal(ctx, sandbox.TerminalSpec{})
	if err != nil {
		t.Fatal(err)
	}
	init := sb.(*fakeSandbox).c.pid
	if err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := os.Stat("/proc/" + strconvItoa(init)); err == nil {
		t.Error("the init still runs")
	}
	if _, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "true"}); err == nil {
		t.Error("exec after Stop succeeded")
	}
	if _, err := term.Write([]byte("x")); err == nil {
		t.Error("terminal write after Stop succeeded")
	}
	if n := countProcs(t, "sleep 1000"); n != 0 {
		t.Errorf("%d processes survive Stop", n)
	}
}

func TestEntrypointAndHealthcheck(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	good, err := b.Build(ctx, env("FROM debian:bookworm\nRUN printf '#!/bin/sh\\ntouch /tmp/entry-ran\\nexec \"$@\"\\n' > /entry.sh && chmod +x /entry.sh\nENTRYPOINT [\"/entry.sh\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: good, Healthcheck: &bundle.Healthcheck{Command: "test -f /tmp/entry-ran", IntervalSec: 0.1, Retries: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	bad, err := b.Build(ctx, env("FROM debian:bookworm\nENTRYPOINT [\"/bin/false\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Start(ctx, sandbox.StartSpec{Image: bad})
	var he *sandbox.HealthcheckError
	if !errors.As(err, &he) || !he.Exited {
		t.Errorf("start with a failing entrypoint: %v; want an exited *HealthcheckError", err)
	}

	_, err = b.Start(ctx, sandbox.StartSpec{Image: good, Healthcheck: &bundle.Healthcheck{Command: "exit 1", IntervalSec: 0.05, Retries: 2}})
	if !errors.As(err, &he) || he.Exited || he.Attempts != 2 {
		t.Errorf("start with a failing healthcheck: %v; want a *HealthcheckError after 2 attempts", err)
	}
}

func TestBuildErrors(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, dockerfile string
		timeout          time.Duration
		want             string
		isTimeout        bool
	}{
		{"failing RUN", "FROM debian:bookworm\nRUN echo building; exit 7\n", time.Minute, "non-zero code: 7", false},
		{"timeout", "FROM debian:bookworm\nRUN sleep 302\n", 500 * time.Millisecond, "build_timeout_sec", true},
		{"multi-stage", "FROM debian:bookworm AS a\nFROM debian:bookworm\nCOPY --from=a /x /y\n", time.Minute, "not supported by the fake", false},
		{"missing source", "FROM debian:bookworm\nCOPY nothing /x\n", time.Minute, "file not found in build context", false},
		{"RUN --mount", "FROM debian:bookworm\nRUN --mount=type=cache,target=/c true\n", time.Minute, "not supported by the fake", false},
		{"unknown instruction", "FROM debian:bookworm\nFROBNICATE x\n", time.Minute, "unknown instruction", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(tc.dockerfile)
			e.BuildTimeout = tc.timeout
			start := time.Now()
			_, err := b.Build(ctx, e)
			var be *sandbox.BuildError
			if !errors.As(err, &be) || be.Timeout != tc.isTimeout || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want a *BuildError (timeout %v) saying %q", err, tc.isTimeout, tc.want)
			}
			if tc.isTimeout && time.Since(start) > 10*time.Second {
				t.Errorf("the timed-out build took %s", time.Since(start))
			}
			if tc.name == "failing RUN" && !strings.Contains(be.Log, "building") {
				t.Errorf("log %q lacks the RUN's output", be.Log)
			}
		})
	}
	if n := countProcs(t, "sleep 302"); n != 0 {
		t.Errorf("%d processes of the timed-out build survive", n)
	}
}

func TestBuildCache(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	e := env("FROM debian:bookworm\nRUN date +%s%N > /stamp\n")
	first, err := b.Build(ctx, e)
	if err != nil || first.Cached {
		t.Fatalf("%+v, %v", first, err)
	}
	again, err := b.Build(ctx, e)
	if err != nil || !again.Cached || again.Ref != first.Ref {
		t.Fatalf("second build %+v, %v; want cached %s", again, err, first.Ref)
	}
	// A rebuild replaces the image; a sandbox of the old one keeps its files.
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: first})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop(ctx)
	before := run(t, sb, sandbox.ExecRequest{Cmd: "cat /stamp"}).Stdout
	e.Rebuild = true
	if img, err := b.Build(ctx, e); err != nil || img.Cached {
		t.Fatalf("rebuild %+v, %v", img, err)
	}
	if after := run(t, sb, sandbox.ExecRequest{Cmd: "cat /stamp"}); string(after.Stdout) != string(before) || len(before) == 0 {
		t.Errorf("the running sandbox's /stamp went from %q to %q (%s)", before, after.Stdout, after.Stderr)
	}
	fresh, err := b.Start(ctx, sandbox.StartSpec{Image: first})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Stop(ctx)
	if got := run(t, fresh, sandbox.ExecRequest{Cmd: "cat /stamp"}).Stdout; string(got) == string(before) {
		t.Error("a sandbox started after the rebuild sees the old image")
	}
}

func TestGC(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	img, err := b.Build(ctx, env("FROM debian:bookworm\n"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	// A sandbox of a dead run: another backend on the same directory,
	// whose handle is forgotten (as if its process had died).
	other, err := New(Options{RunID: "dead-run", Dir: b.dir})
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := other.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	orphanPid := orphan.(*fakeSandbox).c.pid
	rep, err := b.GC(ctx, sandbox.GCOptions{ExceptRun: b.runID})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Containers) != 1 {
		t.Errorf("gc removed %v; want the dead run's sandbox only", rep.Containers)
	}
	<-orphan.(*fakeSandbox).c.exited
	if _, err := os.Stat("/proc/" + strconvItoa(orphanPid) + "/root/etc"); err == nil {
		t.Error("the dead run's sandbox still runs")
	}
	run(t, sb, sandbox.ExecRequest{Cmd: "true"}) // the current run's sandbox is kept
	rep, err = b.GC(ctx, sandbox.GCOptions{Run: b.runID, Images: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Containers) != 1 || len(rep.Images) != 1 {
		t.Errorf("gc of the run removed %+v; want its sandbox and image", rep)
	}
	if _, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "true"}); err == nil {
		t.Error("exec in a collected sandbox succeeded")
	}
	_ = other.Close()
}

// countProcs counts host processes whose command line ends with suffix.
func countProcs(t *testing.T, suffix string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.HasSuffix(strings.TrimRight(strings.ReplaceAll(string(cmdline), "\x00", " "), " "), suffix) {
			n++
		}
	}
	return n
}

func strconvItoa(n int) string { return strconv.Itoa(n) }

func TestCloseEndsBuilds(t *testing.T) {
	b := newBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Build(ctx, env("FROM debian:bookworm\nRUN sleep 301\n"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("a caller that gave up: %v after %s", err, time.Since(start))
	}
	start = time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("Close took %s", time.Since(start))
	}
	if n := countProcs(t, "sleep 301"); n != 0 {
		t.Errorf("%d processes of the build survive Close", n)
	}
	if _, err := b.Build(context.Background(), env("FROM debian:bookworm\n")); err == nil {
		t.Error("Build after Close succeeded")
	}
}

func TestExecAfterMainExit(t *testing.T) {
	b := newBackend(t)
	ctx := context.Background()
	img, err := b.Build(ctx, env("FROM debian:bookworm\nRUN printf '#!/bin/sh\\nexec \"$@\"\\n' > /e.sh && chmod +x /e.sh\nENTRYPOINT [\"/e.sh\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop(ctx)
	// Kill the main process; the exec may die with the sandbox (an error).
	_, _ = sb.Exec(ctx, sandbox.ExecRequest{Cmd: "pkill -x sleep", User: "root"})
	<-sb.(*fakeSandbox).c.exited
	_, err = sb.Exec(ctx, sandbox.ExecRequest{Cmd: "true"})
	if !sandbox.IsInfra(err) {
		t.Errorf("exec after the main process exited: %v; want an infrastructure error", err)
	}
}

func TestBuildOffline(t *testing.T) {
	b := newBackend(t)
	_, err := b.Build(context.Background(), env("FROM alpine:3.20\nRUN apk add --no-cache bash\n"))
	var be *sandbox.BuildError
	if !errors.As(err, &be) || !be.Offline {
		t.Errorf("apk on the Debian host: %v; want a *BuildError marked Offline", err)
	}
}

func TestPlantedSymlinksStayInside(t *testing.T) {
	b := newBackend(t)
	// A host directory that sandboxes see too (through the lower layer):
	// writes through a symlink to it must land in the sandbox's upper.
	canary, err := os.MkdirTemp("/var/cache", "otcurate-canary-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(canary) })
	sb := start(t, b, "FROM debian:bookworm\nRUN rm -rf /logs && ln -s "+canary+" /logs\n")
	res := run(t, sb, sandbox.ExecRequest{Cmd: "stat -c '%a %F' /logs/agent; readlink /logs"})
	if !strings.HasPrefix(string(res.Stdout), "777 directory\n") {
		t.Errorf("/logs/agent: %q %q", res.Stdout, res.Stderr)
	}
	ents, err := os.ReadDir(canary)
	if err != nil || len(ents) != 0 {
		t.Errorf("the host directory a symlink in the image names was written to: %v %v", ents, err)
	}
}
