package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/helper"
)

const (
	killTimeout = 10 * time.Second
	// streamGrace is how long an exec's output may keep flowing after the
	// kill of a timed-out command.
	streamGrace = 5 * time.Second
	// exitNotFound is Download's exit code for a missing file.
	exitNotFound = 44
	// exitNotRegular is Download's exit code for a path that is not a
	// regular file (a directory).
	exitNotRegular = 45
)

var errStopped = errors.New("sandbox is stopped")

// podSandbox is one running pod.
type podSandbox struct {
	b       *Backend
	name    string
	workdir string

	storageMB int64 // the task's storage_mb (the pod's ephemeral-storage limit)

	mu        sync.Mutex
	stopped   bool
	terminals []*podTerminal
	limit     *sandbox.LimitError // the pod was evicted past storageMB (LimitExceeded)

	baseline string // the processes KillAll spares (sandbox.ShellSnapshot)

	// The helper's current upload (see runHelper); dirty is set by every
	// Exec and terminal: code of the agent may have run since.
	hmu   sync.Mutex
	hdir  string
	hbin  *helper.Binary
	dirty atomic.Bool
	// ran is set with dirty and never cleared: code of the agent (or of
	// the task) may have run. helperOK says the helper was written and
	// ran when the sandbox started, before any such code (snapshot);
	// noHelper says why it could not, and this sandbox uses the image's
	// shell instead.
	ran      atomic.Bool
	helperOK bool
	noHelper string
}

var _ sandbox.Sandbox = (*podSandbox)(nil)

// ID is the pod name.
func (s *podSandbox) ID() string { return s.name }

func (s *podSandbox) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// executor opens an exec of argv in the sandbox container: WebSocket
// first (Kubernetes ≥ 1.30), SPDY where the server or a proxy refuses it.
func (s *podSandbox) executor(argv []string, stdin, tty bool) (remotecommand.Executor, error) {
	req := s.b.api.pods(s.b.ns).execRequest(s.name, &corev1.PodExecOptions{Container: containerName, Command: argv,
		Stdin: stdin, Stdout: true, Stderr: !tty, TTY: tty})
	ws, err := remotecommand.NewWebSocketExecutor(s.b.rest, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(s.b.rest, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// argv wraps a command the way the Docker engine runs an exec: as user
// (sandbox.AsUserArgv), in workdir, with env and the exec marker that lets
// a timeout kill every process of the command.
func argv(user, workdir string, env map[string]string, marker string, cmd []string) []string {
	a := append(sandbox.AsUserArgv(user), "env")
	if workdir != "" {
		a = append(a, "-C", workdir)
	}
	a = append(a, sandbox.EnvList(env)...)
	if marker != "" {
		a = append(a, sandbox.ExecMarkerVar+"="+marker)
	}
	return append(a, cmd...)
}

// stream runs one exec to its end; the command's exit code is returned,
// with a nil error, when it ran.
func (s *podSandbox) stream(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	ex, err := s.executor(argv, stdin != nil, false)
	if err != nil {
		return -1, infra("engine_error", "exec in pod %s: %w", s.name, err)
	}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	var ee utilexec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitStatus(), nil
	case ctx.Err() != nil:
		return -1, ctx.Err()
	}
	if exited := s.exitedSettled(ctx); exited != nil {
		return -1, infra("engine_error", "sandbox %s stopped: %v", s.name, exited)
	}
	if isExecStartFailure(err.Error()) {
		// The runtime could not start the program in the container (it is
		// missing, or not executable): the container's doing, reported as
		// the Docker engine reports it, exit 126 and the message.
		if stderr == nil {
			stderr = stdout
		}
		_, _ = io.WriteString(stderr, err.Error()+"\n")
		return 126, nil
	}
	return -1, infra("engine_error", "exec in pod %s: %w", s.name, err)
}

// isExecStartFailure recognises the container runtime's message, passed on
// by the kubelet, for an exec whose program could not be started.
func isExecStartFailure(msg string) bool {
	return strings.Contains(msg, "OCI runtime exec failed") || strings.Contains(msg, "unable to start container process") ||
		strings.Contains(msg, "executable file not found")
}

// Exec implements sandbox.Sandbox with the Docker backend's semantics:
// `bash -c`, both streams capped (head and tail kept), a timeout that
// kills every process of the command and sets TimedOut.
func (s *podSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	s.dirty.Store(true)
	s.ran.Store(true)
	if s.isStopped() {
		return sandbox.ExecResult{}, errStopped
	}
	start := time.Now()
	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = sandbox.DefaultMaxOutput
	}
	stdout, stderr := sandbox.NewHeadTail(maxOut), sandbox.NewHeadTail(maxOut)
	marker := sandbox.NewExecMarker()
	wd := req.Workdir
	if wd == "" {
		wd = s.workdir
	}
	cmd := argv(req.User, wd, req.Env, marker, []string{"bash", "-c", req.Cmd})

	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := s.stream(sctx, cmd, nil, stdout, stderr)
		done <- result{code, err}
	}()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var r result
	timedOut := false
	select {
	case r = <-done:
	case <-timeout:
		timedOut = true
		s.killExec(ctx, marker, req.User)
		select {
		case r = <-done:
		case <-time.After(streamGrace):
			cancel()
			r = <-done
		}
		r.code, r.err = -1, nil
	case <-ctx.Done():
		cancel()
		<-done
		go s.killExec(context.Background(), marker, req.User)
		return sandbox.ExecResult{}, ctx.Err()
	}
	if r.err != nil {
		return sandbox.ExecResult{}, r.err
	}
	return sandbox.ExecResult{
		ExitCode:  r.code,
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		TimedOut:  timedOut,
		Duration:  time.Since(start),
	}, nil
}

// killExec kills every process tagged with marker, as root and, for a
// command of another user, as that user (whose /proc entries only it can
// read).
func (s *podSandbox) killExec(ctx context.Context, marker, user string) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	users := []string{""}
	if user != "" && user != "root" && user != "0" && !strings.HasPrefix(user, "0:") {
		users = append(users, user)
	}
	for _, u := range users {
		cmd := argv(u, "", nil, "", []string{"bash", "-c", sandbox.KillScript, "otcurate-kill", sandbox.ExecMarkerVar + "=" + marker})
		if _, err := s.stream(kctx, cmd, nil, io.Discard, io.Discard); err != nil {
			s.b.log.Warn("cannot kill a timed-out exec", "pod", s.name, "user", u, "err", err)
		}
	}
}

// run is a short command of the backend's own as the container's user
// (root in task images). A non-zero exit is an infrastructure error that
// wraps an *exitErr (its code tells callers what failed).
func (s *podSandbox) run(ctx context.Context, what string, stdin io.Reader, cmd ...string) ([]byte, error) {
	var out, errb bytes.Buffer
	code, err := s.stream(ctx, cmd, stdin, &out, &errb)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return out.Bytes(), infra("engine_error", "pod %s: %w", s.name, &exitErr{what: what, code: code, stderr: strings.TrimSpace(errb.String())})
	}
	return out.Bytes(), nil
}

type exitErr struct {
	what   string
	code   int
	stderr string
}

func (e *exitErr) Error() string { return fmt.Sprintf("%s: exit %d: %s", e.what, e.code, e.stderr) }

// makeLogDirs creates /logs/{agent,verifier,artifacts} with mode 777.
func (s *podSandbox) makeLogDirs(ctx context.Context) error {
	dirs := make([]string, len(sandbox.LogDirs))
	for i, d := range sandbox.LogDirs {
		dirs[i] = "/" + d
	}
	args := append([]string{"sh", "-c", `mkdir -p "$@" && chmod 777 "$@"`, "sh"}, dirs...)
	_, err := s.run(ctx, "create /logs directories", nil, args...)
	return err
}

// Upload implements sandbox.Sandbox: one gzip tar through the exec's
// stdin, unpacked by tar as root (owner root, modes kept).
func (s *podSandbox) Upload(ctx context.Context, dir string, files []bundle.Entry) error {
	if s.isStopped() {
		return errStopped
	}
	var tgz bytes.Buffer
	if err := bundle.Encode(&tgz, files); err != nil {
		return err
	}
	_, err := s.run(ctx, "unpack upload into "+dir, &tgz, "sh", "-c", `mkdir -p "$1" && tar -xzf - --no-same-owner -C "$1"`, "sh", dir)
	return err
}

// Download implements sandbox.Sandbox.
func (s *podSandbox) Download(ctx context.Context, path string, max int64) ([]byte, error) {
	if s.isStopped() {
		return nil, errStopped
	}
	if max <= 0 {
		max = 1 << 40
	}
	script := fmt.Sprintf(`[ -e "$1" ] || exit %d; [ -f "$1" ] || exit %d; head -c "$2" -- "$1"`, exitNotFound, exitNotRegular)
	out, err := s.run(ctx, "read "+path, nil, "sh", "-c", script, "sh", path, strconv.FormatInt(max, 10))
	if ee := (*exitErr)(nil); errors.As(err, &ee) {
		switch ee.code {
		case exitNotFound:
			return nil, sandbox.ErrNotFound
		case exitNotRegular:
			return nil, fmt.Errorf("read %s: %w", path, sandbox.ErrNotRegular)
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stop implements sandbox.Sandbox: it deletes the pod and waits until it
// is gone (the kubelet has killed its containers), even when ctx is
// cancelled. Idempotent.
func (s *podSandbox) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	terms := s.terminals
	s.terminals = nil
	s.mu.Unlock()
	for _, t := range terms {
		t.Close()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	pods := s.b.api.pods(s.b.ns)
	// Grace 1, not 0: a zero grace period removes the object at once
	// (a force delete) while the kubelet may still be running the
	// containers; with 1 the object goes only once they are dead.
	grace := int64(1)
	err := pods.Delete(ctx, s.name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return infra("engine_error", "delete pod %s: %w", s.name, err)
	}
	for {
		_, err := pods.Get(ctx, s.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return infra("engine_error", "pod %s still present 2 min after its deletion", s.name)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// podTerminal is an exec with a TTY.
type podTerminal struct {
	in     *io.PipeWriter
	out    *io.PipeReader
	cancel context.CancelFunc
	done   chan struct{} // closed when the exec stream has ended
	once   sync.Once
}

// fixedSize answers the terminal size once.
type fixedSize struct {
	size remotecommand.TerminalSize
	sent bool
}

func (f *fixedSize) Next() *remotecommand.TerminalSize {
	if f.sent {
		return nil
	}
	f.sent = true
	return &f.size
}

// OpenTerminal implements sandbox.Sandbox: spec.Cmd on a TTY, its
// keystrokes and screen through the exec stream.
func (s *podSandbox) OpenTerminal(ctx context.Context, spec sandbox.TerminalSpec) (sandbox.Terminal, error) {
	s.dirty.Store(true)
	s.ran.Store(true)
	if s.isStopped() {
		return nil, errStopped
	}
	spec = spec.WithDefaults()
	wd := spec.Workdir
	if wd == "" {
		wd = s.workdir
	}
	ex, err := s.executor(argv(spec.User, wd, spec.Env, sandbox.NewExecMarker(), spec.Cmd), true, true)
	if err != nil {
		return nil, infra("engine_error", "terminal in pod %s: %w", s.name, err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t := &podTerminal{in: inW, out: outR, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		err := ex.StreamWithContext(tctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Tty: true,
			TerminalSizeQueue: &fixedSize{size: remotecommand.TerminalSize{Width: uint16(spec.Cols), Height: uint16(spec.Rows)}}})
		if err != nil {
			var ee utilexec.ExitError
			if errors.As(err, &ee) {
				err = nil
			}
		}
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
		inR.CloseWithError(io.EOF) // later keystrokes fail; the stdin copier ends quietly
	}()
	s.mu.Lock()
	s.terminals = append(s.terminals, t)
	s.mu.Unlock()
	return t, nil
}

// Read returns terminal output.
func (t *podTerminal) Read(p []byte) (int, error) { return t.out.Read(p) }

// Write sends keystrokes.
func (t *podTerminal) Write(p []byte) (int, error) { return t.in.Write(p) }

// terminalHangup is how long Close lets the shell exit on the end of its
// input before it drops the stream.
const terminalHangup = 2 * time.Second

// Close hangs up: end of input (an interactive shell exits), then, if the
// stream is still open after terminalHangup, the stream is dropped.
// Processes started in the background live on until Stop. Idempotent.
func (t *podTerminal) Close() error {
	t.once.Do(func() {
		t.in.Close()
		select {
		case <-t.done:
		case <-time.After(terminalHangup):
		}
		t.cancel()
	})
	return nil
}
