package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// The tests run against the real engine. Everything they create carries
// one of two run ids: testRunID (unique per process; all of it, images
// included, is removed by TestMain) or fixtureRunID (images kept as a
// cache across test runs; its containers are removed by TestMain).
const (
	fixtureRunID   = "otcurate-sandbox-test-fixtures"
	requireDocker  = "OTCURATE_REQUIRE_DOCKER"
	healthFixture  = "/work/shared/fixtures/harbor-examples/hello-healthcheck"
	bookwormFrom   = "FROM debian:bookworm\n"
	sharedUser     = "agent"
	sharedWorkdir  = "/work"
	buildingLogMsg = "building environment image"
)

var testRunID = "otcurate-sandbox-test-" + randomHex(6)

// testEnv is the engine connection shared by the tests.
type testEnv struct {
	d      *Engine // labels testRunID
	fx     *Engine // labels fixtureRunID
	builds *atomic.Int64
	err    error
}

var (
	envOnce    sync.Once
	env        testEnv
	sharedOnce sync.Once
	sharedImg  sandbox.Image
	sharedErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env.d != nil {
		if n := cleanupTestRuns(); n != 0 {
			fmt.Fprintf(os.Stderr, "FAIL: %d container(s) of the test runs remain after GC\n", n)
			code = 1
		}
		_ = env.d.Close()
		_ = env.fx.Close()
	}
	os.Exit(code)
}

// cleanupTestRuns removes what the tests created and returns the number of
// containers still labelled with a test run afterwards.
func cleanupTestRuns() int {
	ctx := context.Background()
	rep, err := env.d.GC(ctx, sandbox.GCOptions{Run: testRunID, Images: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "gc %s: %v\n", testRunID, err)
	}
	rep2, err := env.fx.GC(ctx, sandbox.GCOptions{Run: fixtureRunID})
	if err != nil {
		fmt.Fprintf(os.Stderr, "gc %s: %v\n", fixtureRunID, err)
	}
	if testing.Verbose() {
		fmt.Printf("cleanup: removed %d container(s), %d image(s) of %s; %d fixture container(s)\n",
			len(rep.Containers), len(rep.Images), testRunID, len(rep2.Containers))
	}
	return len(runContainers(ctx, env.d, testRunID)) + len(runContainers(ctx, env.d, fixtureRunID))
}

// runContainers lists every container (stopped too) of a run.
func runContainers(ctx context.Context, d *Engine, run string) []string {
	left, err := d.Containers(ctx, run)
	if err != nil {
		return []string{"list failed: " + err.Error()}
	}
	return left
}

// assertNoRunContainers is the leak check of one test: no container of the
// test run exists (the tests of this file run one at a time).
func assertNoRunContainers(t *testing.T, run string) {
	t.Helper()
	if left := runContainers(context.Background(), env.d, run); len(left) > 0 {
		t.Errorf("containers of run %s remain: %v", run, left)
	}
}

// needDocker returns the shared engine connection, or skips the test (fails
// it when OTCURATE_REQUIRE_DOCKER is set) when no engine answers.
func needDocker(t testing.TB) *testEnv {
	t.Helper()
	envOnce.Do(func() {
		ctx := context.Background()
		counter := &atomic.Int64{}
		var next slog.Handler = slog.DiscardHandler
		if os.Getenv("OTCURATE_TEST_LOG") != "" {
			next = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})
		}
		log := slog.New(&countingHandler{msg: buildingLogMsg, n: counter, next: next})
		d, err := New(ctx, Options{RunID: testRunID, Logger: log})
		if err != nil {
			env.err = err
			return
		}
		fx, err := New(ctx, Options{RunID: fixtureRunID, Logger: log})
		if err != nil {
			_ = d.Close()
			env.err = err
			return
		}
		env = testEnv{d: d, fx: fx, builds: counter}
	})
	if env.err != nil {
		if os.Getenv(requireDocker) != "" {
			t.Fatalf("no Docker engine, and %s is set: %v", requireDocker, env.err)
		}
		t.Skipf("no Docker engine answers (%v); set %s=1 to make this a failure", env.err, requireDocker)
	}
	return &env
}

// countingHandler counts log records with one message and passes every
// record on (OTCURATE_TEST_LOG=1 prints them).
type countingHandler struct {
	msg  string
	n    *atomic.Int64
	next slog.Handler
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}
func (h *countingHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return &countingHandler{msg: h.msg, n: h.n, next: h.next.WithAttrs(a)}
}
func (h *countingHandler) WithGroup(g string) slog.Handler {
	return &countingHandler{msg: h.msg, n: h.n, next: h.next.WithGroup(g)}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// dockerfileEnv is an environment made of one Dockerfile (plus files).
func dockerfileEnv(dockerfile string, timeout time.Duration, extra ...bundle.Entry) sandbox.Environment {
	files := append([]bundle.Entry{{Name: "Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(dockerfile)}}, extra...)
	return sandbox.Environment{Hash: entriesHash(files), Files: files, BuildTimeout: timeout, Task: "test/" + randomHex(3)}
}

func entriesHash(files []bundle.Entry) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s %d %o %s %d\n", f.Name, f.Kind, f.Mode, f.Linkname, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sharedImage is a small image with a user and a WORKDIR, built once and
// kept across test runs (fixture run id).
func sharedImage(t *testing.T) sandbox.Image {
	t.Helper()
	e := needDocker(t)
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		sharedImg, sharedErr = e.fx.Build(ctx, dockerfileEnv(bookwormFrom+
			"RUN useradd -m -u 1001 "+sharedUser+" && mkdir -p "+sharedWorkdir+" && echo hi > "+sharedWorkdir+"/hello.txt\n"+
			"WORKDIR "+sharedWorkdir+"\n", 2*time.Minute))
	})
	if sharedErr != nil {
		t.Fatalf("building the shared test image: %v", sharedErr)
	}
	return sharedImg
}

// start starts a sandbox that the test stops at its end.
func start(t *testing.T, d *Engine, spec sandbox.StartSpec) sandbox.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := d.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return sb
}

// run executes a command that must not fail at the infrastructure level.
func run(t *testing.T, sb sandbox.Sandbox, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	if req.Timeout == 0 {
		req.Timeout = 30 * time.Second
	}
	res, err := sb.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Cmd, err)
	}
	return res
}

// hostProcs lists the host processes whose argv is exactly argv (the engine
// is local in these tests, so container processes are visible in /proc).
func hostProcs(argv ...string) []string {
	want := strings.Join(argv, "\x00") + "\x00"
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		b, err := os.ReadFile(dir + "/cmdline")
		if err == nil && string(b) == want {
			pids = append(pids, filepath.Base(dir))
		}
	}
	return pids
}

// containersRunning lists all containers whose command contains s.
func containersWithCommand(t *testing.T, s string) []string {
	t.Helper()
	res, err := env.d.cli.ContainerList(context.Background(), client.ContainerListOptions{All: true})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var ids []string
	for _, c := range res.Items {
		if strings.Contains(c.Command, s) {
			ids = append(ids, shortID(c.ID)+" "+c.Command)
		}
	}
	return ids
}

// --- tests that need no engine -------------------------------------------

func TestNewNoEngine(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "no-engine.sock")
	t0 := time.Now()
	_, err := New(context.Background(), Options{Host: "unix://" + sock})
	var ie *sandbox.InfraError
	if !errors.As(err, &ie) || ie.Kind != "engine_unavailable" {
		t.Fatalf("err = %v, want *InfraError engine_unavailable", err)
	}
	if !strings.Contains(err.Error(), "no Docker engine answers") {
		t.Errorf("message not clear: %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("took %s, want fail-fast", d)
	}
	t.Logf("error: %v", err)
}

// TestDockerEngineDropsConnections runs every entry point against a fake
// engine that answers the ping and then hangs up on every request: each
// must return an *InfraError of kind engine_unavailable.
func TestDockerEngineDropsConnections(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "flaky.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			w.Header().Set("Api-Version", "1.41")
			w.WriteHeader(http.StatusOK)
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx := context.Background()
	d, err := New(ctx, Options{Host: "unix://" + sock, RunID: "fake"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer d.Close()
	if v := d.APIVersion(); v != "1.41" {
		t.Errorf("negotiated API %s, want 1.41", v)
	}
	sb := &dockerSandbox{d: d, id: "0123456789ab", exited: make(chan struct{})}
	calls := map[string]func() error{
		"Build": func() error {
			_, err := d.Build(ctx, dockerfileEnv(bookwormFrom, time.Minute))
			return err
		},
		"Start": func() error { _, err := d.Start(ctx, sandbox.StartSpec{Image: sandbox.Image{Ref: "x"}}); return err },
		"Exec":  func() error { _, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "true"}); return err },
		"Upload": func() error {
			return sb.Upload(ctx, "/x", []bundle.Entry{{Name: "f", Kind: bundle.KindFile, Data: []byte("x")}})
		},
		"Download": func() error { _, err := sb.Download(ctx, "/x", 10); return err },
		"GC":       func() error { _, err := d.GC(ctx, sandbox.GCOptions{}); return err },
		"Stop":     func() error { return sb.Stop(ctx) },
	}
	for name, call := range calls {
		var ie *sandbox.InfraError
		if err := call(); !errors.As(err, &ie) || ie.Kind != "engine_unavailable" {
			t.Errorf("%s: err = %v, want *InfraError engine_unavailable", name, err)
		}
	}
}

func TestImageTagAndChecks(t *testing.T) {
	if tag, err := ImageTag("0123456789abcdef0123"); err != nil || tag != "otcurate-env:0123456789abcdef" {
		t.Errorf("ImageTag = %q, %v", tag, err)
	}
	if _, err := ImageTag("xyz"); err == nil {
		t.Error("ImageTag accepted a bad hash")
	}
	var be *sandbox.BuildError
	err := checkBuildable([]bundle.Entry{{Name: "docker-compose.yaml", Kind: bundle.KindFile}})
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "compose") {
		t.Errorf("compose env: %v", err)
	}
	if !looksOffline("E: Temporary failure resolving 'deb.debian.org'") || looksOffline("exit code: 3") {
		t.Error("looksOffline misclassifies")
	}
	// The engine's own failures are infrastructure, a RUN step's are the task's.
	docker0 := buildOutput{log: sandbox.NewTail(buildLogMax), errMsg: "failed to create endpoint x on network bridge: adding interface veth1 to bridge docker0 failed: could not find bridge docker0: route ip+net: no such network interface"}
	if err := buildFailure(context.Background(), context.Background(), "t", 0, docker0, nil); !sandbox.IsInfra(err) {
		t.Errorf("missing bridge: %v, want an infrastructure error", err)
	}
	exit3 := buildOutput{log: sandbox.NewTail(buildLogMax), errMsg: "The command '/bin/sh -c exit 3' returned a non-zero code: 3"}
	if err := buildFailure(context.Background(), context.Background(), "t", 0, exit3, nil); !errors.As(err, &be) {
		t.Errorf("RUN exit 3: %v, want a BuildError", err)
	}
	refs := fromImages([]byte("FROM --platform=linux/amd64 python:3.12 AS base\nFROM base\nFROM scratch\nfrom ubuntu:24.04\n"))
	if !slices.Equal(refs, []string{"python:3.12", "ubuntu:24.04"}) {
		t.Errorf("fromImages = %v", refs)
	}
}

// --- build ---------------------------------------------------------------

func TestDockerBuildCacheAndSingleFlight(t *testing.T) {
	e := needDocker(t)
	ctx := context.Background()
	envA := dockerfileEnv(bookwormFrom+"RUN echo "+testRunID+" > /marker\n", time.Minute)

	before := e.builds.Load()
	t0 := time.Now()
	const callers = 3
	imgs := make([]sandbox.Image, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { imgs[i], errs[i] = e.d.Build(ctx, envA) })
	}
	wg.Wait()
	first := time.Since(t0)
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("Build #%d: %v", i, errs[i])
		}
		if imgs[i].Ref != imgs[0].Ref || imgs[i].Cached {
			t.Errorf("Build #%d = %+v, want the shared fresh build", i, imgs[i])
		}
	}
	if n := e.builds.Load() - before; n != 1 {
		t.Errorf("%d concurrent callers ran %d builds, want 1", callers, n)
	}
	if len(imgs[0].Warnings) == 0 || !strings.Contains(imgs[0].Warnings[0], "local otcurate base") {
		t.Errorf("warnings = %q, want the base-image stand-in note", imgs[0].Warnings)
	}

	t1 := time.Now()
	again, err := e.d.Build(ctx, envA)
	second := time.Since(t1)
	if err != nil || !again.Cached || again.Ref != imgs[0].Ref {
		t.Fatalf("second Build = %+v, %v; want cached", again, err)
	}
	if second > first/5 {
		t.Errorf("cached build took %s (first %s)", second, first)
	}
	t.Logf("first build %s (%d callers, 1 build), cached %s; ref %s; warnings %q",
		first.Round(time.Millisecond), callers, second.Round(time.Microsecond), again.Ref, imgs[0].Warnings)

	// Rebuild ignores the cached image (and the layer cache).
	envA.Rebuild = true
	fresh, err := e.d.Build(ctx, envA)
	if err != nil || fresh.Cached || fresh.Ref != imgs[0].Ref {
		t.Fatalf("Rebuild = %+v, %v; want a fresh build of the same tag", fresh, err)
	}
	if n := e.builds.Load() - before; n != 2 {
		t.Errorf("after Rebuild %d builds ran, want 2", n)
	}
}

func TestDockerBuildFailure(t *testing.T) {
	e := needDocker(t)
	marker := "boom-" + randomHex(4)
	_, err := e.d.Build(context.Background(), dockerfileEnv(bookwormFrom+"RUN echo "+marker+" && exit 3\n", time.Minute))
	var be *sandbox.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want *BuildError", err)
	}
	if be.Timeout || be.Offline || !strings.Contains(be.Log, marker) || !strings.Contains(be.Log, "returned a non-zero code: 3") {
		t.Errorf("BuildError = %+v", be)
	}
	if left := containersWithCommand(t, marker); len(left) > 0 {
		t.Errorf("build containers left: %v", left)
	}
	t.Logf("error: %v; log tail:\n%s", err, be.Log)
}

func TestDockerBuildTimeout(t *testing.T) {
	e := needDocker(t)
	marker := "timeout-" + randomHex(4)
	t0 := time.Now()
	// An unusual duration, so no other test's process matches.
	_, err := e.d.Build(context.Background(), dockerfileEnv(bookwormFrom+"RUN sleep 37.1 && echo "+marker+"\n", 3*time.Second))
	took := time.Since(t0)
	var be *sandbox.BuildError
	if !errors.As(err, &be) || !be.Timeout {
		t.Fatalf("err = %v, want *BuildError{Timeout}", err)
	}
	if took > 10*time.Second {
		t.Errorf("timed-out build returned after %s", took)
	}
	if left := containersWithCommand(t, marker); len(left) > 0 {
		t.Errorf("build containers left: %v", left)
	}
	// The engine kills the step container when the client goes away; that
	// is asynchronous, so allow it a few seconds.
	deadline := time.Now().Add(10 * time.Second)
	for pids := hostProcs("sleep", "37.1"); len(pids) > 0; pids = hostProcs("sleep", "37.1") {
		if time.Now().After(deadline) {
			t.Errorf("build process `sleep 37.1` still runs 10 s after the timeout: pids %v", pids)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("returned after %s: %v", took.Round(time.Millisecond), err)
}

func TestDockerBuildOfflineAndUnsupported(t *testing.T) {
	e := needDocker(t)
	ctx := context.Background()
	cases := map[string]string{
		"unknown base image": "FROM otcurate-no-such-image:" + randomHex(3) + "\n",
		"apk on a stand-in":  "FROM alpine:3.22\nRUN apk add --no-cache bash # " + randomHex(3) + "\n",
	}
	for name, df := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := e.d.Build(ctx, dockerfileEnv(df, time.Minute))
			var be *sandbox.BuildError
			if !errors.As(err, &be) || !be.Offline || be.Timeout {
				t.Fatalf("err = %#v, want *BuildError{Offline}", err)
			}
			t.Logf("%v", err)
		})
	}
	t.Run("syntax error", func(t *testing.T) {
		_, err := e.d.Build(ctx, dockerfileEnv("FORM debian:bookworm # "+randomHex(3)+"\n", time.Minute))
		var be *sandbox.BuildError
		if !errors.As(err, &be) || be.Offline || be.Timeout || sandbox.IsInfra(err) {
			t.Fatalf("err = %#v", err)
		}
		t.Logf("%v", err)
	})
	t.Run("compose", func(t *testing.T) {
		files := []bundle.Entry{{Name: "docker-compose.yaml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("services: {}\n")}}
		_, err := e.d.Build(ctx, sandbox.Environment{Hash: entriesHash(files), Files: files})
		var be *sandbox.BuildError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), "compose environments are not supported") {
			t.Fatalf("err = %v", err)
		}
	})
}

// --- exec ----------------------------------------------------------------

func TestDockerExec(t *testing.T) {
	e := needDocker(t)
	img := sharedImage(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: img, Env: map[string]string{"SANDBOX_VAR": "from-start"}})

	t.Run("exit codes and streams", func(t *testing.T) {
		res := run(t, sb, sandbox.ExecRequest{Cmd: "echo out; echo err >&2; exit 7"})
		if res.ExitCode != 7 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.TimedOut || res.Truncated {
			t.Errorf("res = %+v", res)
		}
		if res := run(t, sb, sandbox.ExecRequest{Cmd: "true"}); res.ExitCode != 0 {
			t.Errorf("true: exit %d", res.ExitCode)
		}
	})
	t.Run("user", func(t *testing.T) {
		if res := run(t, sb, sandbox.ExecRequest{Cmd: "whoami", User: sharedUser}); strings.TrimSpace(string(res.Stdout)) != sharedUser {
			t.Errorf("whoami = %q", res.Stdout)
		}
		if res := run(t, sb, sandbox.ExecRequest{Cmd: "whoami"}); strings.TrimSpace(string(res.Stdout)) != "root" {
			t.Errorf("default user = %q", res.Stdout)
		}
	})
	t.Run("workdir", func(t *testing.T) {
		if res := run(t, sb, sandbox.ExecRequest{Cmd: "pwd; cat hello.txt"}); string(res.Stdout) != sharedWorkdir+"\nhi\n" {
			t.Errorf("image WORKDIR: %q", res.Stdout)
		}
		if res := run(t, sb, sandbox.ExecRequest{Cmd: "pwd", Workdir: "/tmp"}); string(res.Stdout) != "/tmp\n" {
			t.Errorf("request workdir: %q", res.Stdout)
		}
	})
	t.Run("env", func(t *testing.T) {
		res := run(t, sb, sandbox.ExecRequest{Cmd: `echo "$SANDBOX_VAR $REQ_VAR"`, Env: map[string]string{"REQ_VAR": "a b'c"}})
		if string(res.Stdout) != "from-start a b'c\n" {
			t.Errorf("env: %q", res.Stdout)
		}
	})
	t.Run("exec start failures", func(t *testing.T) {
		res := run(t, sb, sandbox.ExecRequest{Cmd: "true", User: "nosuch"})
		if res.ExitCode != 126 || !strings.Contains(string(res.Stderr), "unable to find user nosuch") || len(res.Stdout) != 0 {
			t.Errorf("unknown user: %+v", res)
		}
		res = run(t, sb, sandbox.ExecRequest{Cmd: "true", Workdir: "/no/such/dir"})
		if res.ExitCode != 126 || !strings.Contains(string(res.Stderr), "no such file or directory") {
			t.Errorf("missing workdir: %+v", res)
		}
	})
	t.Run("log dirs", func(t *testing.T) {
		res := run(t, sb, sandbox.ExecRequest{Cmd: "stat -c '%a %U %n' /logs/agent /logs/verifier /logs/artifacts && touch /logs/verifier/x", User: sharedUser})
		want := "777 root /logs/agent\n777 root /logs/verifier\n777 root /logs/artifacts\n"
		if res.ExitCode != 0 || string(res.Stdout) != want {
			t.Errorf("log dirs: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
		}
	})
	t.Run("init and entrypoint", func(t *testing.T) {
		res := run(t, sb, sandbox.ExecRequest{Cmd: "cat /proc/1/cmdline | tr '\\0' ' '; echo; ps -eo args | grep -c '^sleep infinity'"})
		if !strings.Contains(string(res.Stdout), "docker-init -- sleep infinity") {
			t.Errorf("pid 1 = %q, want docker-init running sleep infinity", res.Stdout)
		}
	})
}

func TestDockerExecTimeoutKills(t *testing.T) {
	e := needDocker(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t)})
	cases := []struct{ name, user, cmd string }{
		{"root tree", "", "sleep 1001 & (sleep 1002 &); setsid sleep 1003 & sleep 1004"},
		{"other user", sharedUser, "sleep 1005 & env -i /bin/sleep 1006 & sleep 1007"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			res := run(t, sb, sandbox.ExecRequest{Cmd: "echo started; " + tc.cmd, User: tc.user, Timeout: time.Second})
			took := time.Since(t0)
			if !res.TimedOut || string(res.Stdout) != "started\n" {
				t.Errorf("res = %+v", res)
			}
			if took > 8*time.Second { // generous: the kill runs as execs on a possibly busy engine
				t.Errorf("Exec returned after %s for a 1 s timeout", took)
			}
			ps := run(t, sb, sandbox.ExecRequest{Cmd: "ps -eo pid,user,args | grep '[s]leep 10' || true"})
			if len(bytes.TrimSpace(ps.Stdout)) > 0 {
				t.Errorf("processes survived the timeout:\n%s", ps.Stdout)
			}
			t.Logf("timed out after %s, exit code %d", took.Round(time.Millisecond), res.ExitCode)
		})
	}
}

func TestDockerExecCancel(t *testing.T) {
	e := needDocker(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "sleep 1010"})
	if !errors.Is(err, context.DeadlineExceeded) || sandbox.IsInfra(err) {
		t.Fatalf("err = %v, want the context's error", err)
	}
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("Exec returned %s after the cancel", took)
	}
	// The kill runs in the background.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps := run(t, sb, sandbox.ExecRequest{Cmd: "ps -eo args | grep '[s]leep 1010' || true"})
		if len(bytes.TrimSpace(ps.Stdout)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep 1010 still runs 10 s after the cancel")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDockerExecLargeOutput(t *testing.T) {
	e := needDocker(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t)})
	const total = 200_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	var peak atomic.Uint64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
		}
	})
	t0 := time.Now()
	res := run(t, sb, sandbox.ExecRequest{Cmd: fmt.Sprintf("printf START; head -c %d /dev/zero | tr '\\0' x; printf END; echo tiny >&2", total), Timeout: time.Minute})
	took := time.Since(t0)
	close(stop)
	sampler.Wait()
	runtime.ReadMemStats(&after)

	if res.ExitCode != 0 || !res.Truncated || len(res.Stdout) > sandbox.DefaultMaxOutput {
		t.Fatalf("exit %d truncated %v len %d", res.ExitCode, res.Truncated, len(res.Stdout))
	}
	if !bytes.HasPrefix(res.Stdout, []byte("STARTxxx")) || !bytes.HasSuffix(res.Stdout, []byte("xxxEND")) || string(res.Stderr) != "tiny\n" {
		t.Errorf("head %q tail %q stderr %q", res.Stdout[:8], res.Stdout[len(res.Stdout)-6:], res.Stderr)
	}
	growth := int64(peak.Load()) - int64(before.HeapAlloc)
	if growth > 64<<20 {
		t.Errorf("heap grew by %d MiB while streaming %d MB", growth>>20, total/1_000_000)
	}
	t.Logf("%d MB in %s (%.0f MB/s); kept %d+%d bytes; heap before %.1f MiB, peak %.1f MiB, after %.1f MiB; total allocated during the exec %.1f MiB",
		total/1_000_000, took.Round(time.Millisecond), float64(total)/1e6/took.Seconds(), len(res.Stdout), len(res.Stderr),
		mib(before.HeapAlloc), mib(peak.Load()), mib(after.HeapAlloc), mib(after.TotalAlloc-before.TotalAlloc))
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// --- files ---------------------------------------------------------------

func TestDockerUploadDownload(t *testing.T) {
	e := needDocker(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t)})
	ctx := context.Background()
	files := []bundle.Entry{
		{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")},
		{Name: "sub/data.txt", Kind: bundle.KindFile, Mode: 0o640, Data: []byte("hello data\n")},
		{Name: "link.txt", Kind: bundle.KindSymlink, Linkname: "sub/data.txt"},
	}
	if err := sb.Upload(ctx, "/tests/deep", files); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	res := run(t, sb, sandbox.ExecRequest{Cmd: "cd /tests/deep && stat -c '%a %U:%G %n' test.sh sub/data.txt sub && ./test.sh && cat /logs/verifier/reward.txt", User: sharedUser})
	want := "755 root:root test.sh\n640 root:root sub/data.txt\n755 root:root sub\n"
	if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), want) {
		// data.txt is 640 root: the agent cannot read it, but stat works.
		t.Errorf("after upload: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// Upload into an existing directory keeps its mode.
	if err := sb.Upload(ctx, "/tmp", files[:1]); err != nil {
		t.Fatalf("Upload /tmp: %v", err)
	}
	if res := run(t, sb, sandbox.ExecRequest{Cmd: "stat -c %a /tmp"}); string(res.Stdout) != "1777\n" {
		t.Errorf("/tmp mode after upload: %q", res.Stdout)
	}

	got, err := sb.Download(ctx, "/tests/deep/sub/data.txt", 1<<20)
	if err != nil || string(got) != "hello data\n" {
		t.Errorf("Download = %q, %v", got, err)
	}
	if got, err := sb.Download(ctx, "/tests/deep/link.txt", 1<<20); err != nil || string(got) != "hello data\n" {
		t.Errorf("Download via symlink = %q, %v", got, err)
	}
	if got, err := sb.Download(ctx, "/logs/verifier/reward.txt", 1<<20); err != nil || string(got) != "1\n" {
		t.Errorf("Download reward = %q, %v", got, err)
	}
	if got, err := sb.Download(ctx, "/tests/deep/sub/data.txt", 5); err != nil || string(got) != "hello" {
		t.Errorf("capped Download = %q, %v", got, err)
	}
	if _, err := sb.Download(ctx, "/tests/deep/missing.txt", 10); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("missing file: err = %v, want ErrNotFound", err)
	}
	if _, err := sb.Download(ctx, "/no/such/dir/file", 10); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("missing dir: err = %v, want ErrNotFound", err)
	}
	if _, err := sb.Download(ctx, "/tests/deep/sub", 10); err == nil || errors.Is(err, sandbox.ErrNotFound) || sandbox.IsInfra(err) {
		t.Errorf("directory: err = %v, want a not-a-regular-file error", err)
	}
}

// --- network ---------------------------------------------------------------

func TestDockerNetwork(t *testing.T) {
	e := needDocker(t)
	img := sharedImage(t)
	off := start(t, e.d, sandbox.StartSpec{Image: img})
	if res := run(t, off, sandbox.ExecRequest{Cmd: "ls /sys/class/net"}); strings.Fields(string(res.Stdout))[0] != "lo" || len(strings.Fields(string(res.Stdout))) != 1 {
		t.Errorf("interfaces without network: %q", res.Stdout)
	}
	if res := run(t, off, sandbox.ExecRequest{Cmd: "getent hosts deb.debian.org", Timeout: 20 * time.Second}); res.ExitCode == 0 {
		t.Errorf("name resolution works without network: %q", res.Stdout)
	}
	on := start(t, e.d, sandbox.StartSpec{Image: img, Network: true})
	if res := run(t, on, sandbox.ExecRequest{Cmd: "ls /sys/class/net"}); !strings.Contains(string(res.Stdout), "eth0") {
		t.Errorf("interfaces with network: %q", res.Stdout)
	}
}

// --- start: healthcheck, resources, failures ---------------------------------

func TestDockerHealthcheckFixture(t *testing.T) {
	e := needDocker(t)
	if _, err := os.Stat(healthFixture); err != nil {
		t.Skipf("fixture missing: %v", err)
	}
	var blob bytes.Buffer
	if err := bundle.EncodeDir(&blob, healthFixture); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Scan(blob.Bytes(), bundle.DefaultLimits(), bundle.RetainAll(bundle.Limits{}))
	if err != nil {
		t.Fatal(err)
	}
	toml, _ := b.Data("task.toml")
	cfg, err := bundle.ParseConfig(toml)
	if err != nil {
		t.Fatal(err)
	}
	files, err := b.Entries("environment")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Now()
	img, err := e.fx.Build(ctx, sandbox.Environment{Hash: b.EnvHash, Files: files, Task: "hello-healthcheck",
		BuildTimeout: time.Duration(cfg.Environment.BuildTimeoutSec * float64(time.Second))})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	built := time.Since(t0)
	t1 := time.Now()
	sb := start(t, e.fx, sandbox.StartSpec{Image: img, Healthcheck: cfg.Environment.Healthcheck,
		Resources: sandbox.Resources{CPUs: cfg.Environment.CPUs, MemoryMB: cfg.Environment.MemoryMB}})
	started := time.Since(t1)
	res := run(t, sb, sandbox.ExecRequest{Cmd: "curl -sf localhost:8080"})
	if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "ok" {
		t.Errorf("curl: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The entrypoint received `sleep infinity` and exec'ed it.
	if ps := run(t, sb, sandbox.ExecRequest{Cmd: "ps -eo args"}); !strings.Contains(string(ps.Stdout), "sleep infinity") ||
		!strings.Contains(string(ps.Stdout), "http.server 8080") {
		t.Errorf("processes:\n%s", ps.Stdout)
	}
	limits := run(t, sb, sandbox.ExecRequest{Cmd: "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null"})
	if f := strings.Fields(string(limits.Stdout)); len(f) != 3 || f[0] != "2147483648" || f[1] != "4096" || f[2] != "100000" {
		t.Errorf("cgroup limits (memory, pids, cpu quota): %q", limits.Stdout)
	}
	t.Logf("build %s (cached %v), start with healthcheck %s (server starts after 3 s; start_period 5 s, interval 2 s)",
		built.Round(time.Millisecond), img.Cached, started.Round(time.Millisecond))
}

func TestDockerHealthcheckFailures(t *testing.T) {
	e := needDocker(t)
	ctx := context.Background()
	t.Run("check never passes", func(t *testing.T) {
		t0 := time.Now()
		_, err := e.d.Start(ctx, sandbox.StartSpec{Image: sharedImage(t), Healthcheck: &bundle.Healthcheck{
			Command: "echo not yet; exit 4", IntervalSec: 0.2, TimeoutSec: 5, StartPeriodSec: 0.5, StartIntervalSec: 0.2, Retries: 2}})
		var he *sandbox.HealthcheckError
		if !errors.As(err, &he) || he.Exited || he.ExitCode != 4 || he.Attempts < 2 || !strings.Contains(he.Output, "not yet") {
			t.Fatalf("err = %#v", err)
		}
		t.Logf("after %s: %v", time.Since(t0).Round(time.Millisecond), err)
		assertNoRunContainers(t, testRunID)
	})
	t.Run("check times out", func(t *testing.T) {
		_, err := e.d.Start(ctx, sandbox.StartSpec{Image: sharedImage(t), Healthcheck: &bundle.Healthcheck{
			Command: "sleep 1020", IntervalSec: 0.1, TimeoutSec: 0.5, Retries: 1}})
		var he *sandbox.HealthcheckError
		if !errors.As(err, &he) || !he.TimedOut {
			t.Fatalf("err = %#v", err)
		}
		assertNoRunContainers(t, testRunID)
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := e.d.Start(cctx, sandbox.StartSpec{Image: sharedImage(t), Healthcheck: &bundle.Healthcheck{
			Command: "false", IntervalSec: 0.2, StartPeriodSec: 60, StartIntervalSec: 0.2, Retries: 3}})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the context's error", err)
		}
		assertNoRunContainers(t, testRunID)
	})
	exitImg := func(t *testing.T, entrypoint string) sandbox.Image {
		t.Helper()
		img, err := e.fx.Build(ctx, dockerfileEnv(bookwormFrom+"ENTRYPOINT "+entrypoint+"\n", time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	for _, hc := range []*bundle.Healthcheck{nil, {Command: "sleep 1", TimeoutSec: 5, Retries: 1}} {
		t.Run(fmt.Sprintf("entrypoint exits, healthcheck %v", hc != nil), func(t *testing.T) {
			img := exitImg(t, `["/bin/sh", "-c", "echo entrypoint gives up >&2; exit 3"]`)
			sb, err := e.d.Start(ctx, sandbox.StartSpec{Image: img, Healthcheck: hc})
			if err == nil {
				_ = sb.Stop(ctx)
			}
			var he *sandbox.HealthcheckError
			if !errors.As(err, &he) || !he.Exited || he.ExitCode != 3 || !strings.Contains(he.Output, "gives up") {
				t.Fatalf("err = %#v", err)
			}
			t.Logf("%v (log %q)", err, he.Output)
			assertNoRunContainers(t, testRunID)
		})
	}
	t.Run("entrypoint missing", func(t *testing.T) {
		sb, err := e.d.Start(ctx, sandbox.StartSpec{Image: exitImg(t, `["/no/such/entrypoint"]`)})
		if err == nil {
			_ = sb.Stop(ctx)
		}
		var he *sandbox.HealthcheckError
		if !errors.As(err, &he) || !he.Exited {
			t.Fatalf("err = %#v", err)
		}
		t.Logf("%v (log %q)", err, he.Output)
		assertNoRunContainers(t, testRunID)
	})
}

// --- teardown and GC -------------------------------------------------------

func TestDockerStopAfterCancel(t *testing.T) {
	e := needDocker(t)
	img := sharedImage(t)
	ctx, cancel := context.WithCancel(context.Background())
	sb, err := e.d.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := sb.Stop(ctx); err != nil {
		t.Fatalf("Stop after cancel: %v", err)
	}
	if _, err := e.d.cli.ContainerInspect(context.Background(), sb.ID(), client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("container still exists after Stop: %v", err)
	}
	if err := sb.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := sb.Exec(context.Background(), sandbox.ExecRequest{Cmd: "true"}); err == nil {
		t.Error("Exec on a stopped sandbox succeeded")
	}
	assertNoRunContainers(t, testRunID)
}

func TestDockerGCCrashedRun(t *testing.T) {
	e := needDocker(t)
	img := sharedImage(t)
	ctx := context.Background()
	crashedRun := testRunID + "-crashed"
	crashed, err := New(ctx, Options{RunID: crashedRun})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := crashed.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.ID()
	// A stopped leftover counts too.
	if _, err := e.d.cli.ContainerKill(ctx, id, client.ContainerKillOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = crashed.Close() // the "crash": the handle is dropped, nothing stopped

	// Run keeps this test away from other runs sharing the engine.
	rep, err := e.d.GC(ctx, sandbox.GCOptions{Run: crashedRun, ExceptRun: crashedRun})
	if err != nil || len(rep.Containers) != 0 {
		t.Fatalf("GC excepting the run removed %v, %v", rep.Containers, err)
	}
	rep, err = e.d.GC(ctx, sandbox.GCOptions{Run: crashedRun, ExceptRun: testRunID})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Containers) != 1 || !strings.HasPrefix(rep.Containers[0], shortID(id)) {
		t.Errorf("GC removed %v, want %s", rep.Containers, shortID(id))
	}
	assertNoRunContainers(t, crashedRun)
}

// TestLogDirsBakedAndCopied: an image built here carries /logs/{agent,
// verifier,artifacts} (mode 777, writable by a non-root USER, even when its
// .dockerignore excludes everything) and is labelled so Start skips the
// engine copy; an image built elsewhere gets them copied at start.
func TestLogDirsBakedAndCopied(t *testing.T) {
	e := needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const check = "stat -c '%a %U %n' /logs/agent /logs/verifier /logs/artifacts && touch /logs/verifier/x && echo ok"
	want := "777 root /logs/agent\n777 root /logs/verifier\n777 root /logs/artifacts\nok\n"

	env := dockerfileEnv(bookwormFrom+"# "+randomHex(8)+"\nUSER nobody\n", 2*time.Minute,
		bundle.Entry{Name: ".dockerignore", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("*")})
	img, err := e.d.Build(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.d.cli.ImageRemove(context.Background(), img.Ref, client.ImageRemoveOptions{Force: true}) })
	facts, err := e.d.imageFacts(ctx, img.Ref)
	if err != nil || !facts.logDirs {
		t.Fatalf("built image facts = %+v, %v: want the log dirs label", facts, err)
	}
	sb := start(t, e.d, sandbox.StartSpec{Image: img})
	if res := run(t, sb, sandbox.ExecRequest{Cmd: check}); res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("baked log dirs as nobody: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}

	facts, err = e.d.imageFacts(ctx, benchImage)
	if err != nil || facts.logDirs {
		t.Fatalf("base image facts = %+v, %v: want no label", facts, err)
	}
	sb = start(t, e.d, sandbox.StartSpec{Image: sandbox.Image{Ref: benchImage}})
	if res := run(t, sb, sandbox.ExecRequest{Cmd: check, User: "nobody"}); res.ExitCode != 0 || string(res.Stdout) != want {
		t.Errorf("copied log dirs: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}
