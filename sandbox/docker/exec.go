package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/sandbox"
)

const (
	// killTimeout bounds the kill of a timed-out command.
	killTimeout = 10 * time.Second
	// streamGrace is how long the output may keep flowing after the kill
	// (the engine closes exec streams 2 s after the process exits).
	streamGrace = 5 * time.Second
)

// errSandboxStopped is returned by calls on a stopped sandbox.
var errSandboxStopped = errors.New("sandbox is stopped")

// Exec runs req.Cmd with `bash -c` in the sandbox. Both output streams are
// drained as they come (no pipe deadlock) and capped at MaxOutput each,
// head and tail kept. When the timeout passes, every process of the
// command is killed inside the container and the result has TimedOut set.
// When ctx is cancelled, Exec returns ctx's error at once and the kill
// runs in the background.
func (s *dockerSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return s.exec(ctx, req, []string{"bash", "-c", req.Cmd})
}

// ExecArgv runs argv as it is, without a shell (req.Cmd is ignored),
// otherwise like Exec. It serves daytonatest, whose toolbox, like
// Daytona's daemon, runs a command's words without a shell.
func (s *dockerSandbox) ExecArgv(ctx context.Context, argv []string, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if len(argv) == 0 {
		return sandbox.ExecResult{}, errors.New("exec: no command")
	}
	return s.exec(ctx, req, argv)
}

func (s *dockerSandbox) exec(ctx context.Context, req sandbox.ExecRequest, cmd []string) (sandbox.ExecResult, error) {
	if s.isStopped() {
		return sandbox.ExecResult{}, errSandboxStopped
	}
	start := time.Now()
	marker := sandbox.NewExecMarker()
	execID, att, err := s.startExec(ctx, req, cmd, marker)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	defer att.Close()

	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = sandbox.DefaultMaxOutput
	}
	stdout, stderr := sandbox.NewHeadTail(maxOut), sandbox.NewHeadTail(maxOut)
	timedOut, err := s.drain(ctx, &att, stdout, stderr, req, marker)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	code, running, err := s.exitCode(ctx, execID)
	if err != nil {
		return sandbox.ExecResult{}, s.execError(ctx, "exec inspect", err)
	}
	if running {
		s.d.log.Warn("exec still running after its output closed", "container", shortID(s.id), "timed_out", timedOut)
		code = -1
	}
	res := sandbox.ExecResult{
		ExitCode:  code,
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		TimedOut:  timedOut,
		Duration:  time.Since(start),
	}
	if code == 126 && len(res.Stderr) == 0 && isExecStartFailure(res.Stdout) {
		// The engine reports a failed exec start (unknown user, missing
		// workdir) as a line on stdout; it belongs on stderr.
		res.Stdout, res.Stderr = nil, res.Stdout
	}
	return res, nil
}

// startExec creates the exec, its processes tagged with marker, and
// attaches to its output.
func (s *dockerSandbox) startExec(ctx context.Context, req sandbox.ExecRequest, cmd []string, marker string) (string, client.HijackedResponse, error) {
	created, err := s.d.cli.ExecCreate(ctx, s.id, client.ExecCreateOptions{
		User:         req.User,
		WorkingDir:   req.Workdir,
		Env:          append(sandbox.EnvList(req.Env), sandbox.ExecMarkerVar+"="+marker),
		Cmd:          cmd,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return "", client.HijackedResponse{}, s.execError(ctx, "exec create", err)
	}
	att, err := s.d.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return "", client.HijackedResponse{}, s.execError(ctx, "exec attach", err)
	}
	return created.ID, att.HijackedResponse, nil
}

// drain demultiplexes the exec's output into stdout and stderr until the
// stream ends, the timeout passes (the command is then killed: timedOut)
// or ctx is done (an error).
func (s *dockerSandbox) drain(ctx context.Context, att *client.HijackedResponse, stdout, stderr io.Writer,
	req sandbox.ExecRequest, marker string) (timedOut bool, err error) {
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, att.Reader)
		copied <- err
	}()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var copyErr error
	select {
	case copyErr = <-copied:
	case <-timeout:
		timedOut = true
		s.killExec(ctx, marker, req.User)
		select {
		case copyErr = <-copied:
		case <-time.After(streamGrace):
			att.Close() // something the kill missed still holds the output open
			<-copied
		}
	case <-ctx.Done():
		att.Close()
		<-copied
		s.killExecAsync(marker, req.User)
		return false, fmt.Errorf("exec: %w", ctx.Err())
	}
	if copyErr != nil {
		if !strings.Contains(copyErr.Error(), "error from daemon in stream") {
			return timedOut, s.execError(ctx, "exec output", copyErr)
		}
		_, _ = io.WriteString(stderr, copyErr.Error()+"\n")
	}
	return timedOut, nil
}

// isExecStartFailure recognises the engine's message for an exec that could
// not start.
func isExecStartFailure(out []byte) bool {
	return bytes.HasPrefix(out, []byte("OCI runtime exec failed")) || bytes.HasPrefix(out, []byte("unable to find user"))
}

// exitCode inspects a finished exec. The engine marks the exec stopped
// before it closes the stream, but allow it a moment.
func (s *dockerSandbox) exitCode(ctx context.Context, execID string) (code int, running bool, err error) {
	for attempt := 0; ; attempt++ {
		ins, err := s.d.cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return 0, false, err
		}
		if !ins.Running || attempt >= 20 {
			return ins.ExitCode, ins.Running, nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return 0, false, err
		}
	}
}

// execError classifies an exec failure; a container that stopped under the
// exec is reported with its state.
func (s *dockerSandbox) execError(ctx context.Context, op string, err error) error {
	if ctx.Err() == nil && strings.Contains(err.Error(), "is not running") {
		if exited := s.exitedError(ctx); exited != nil {
			var he *sandbox.HealthcheckError
			if errors.As(exited, &he) {
				// Not %w: no *HealthcheckError after Start. The engine
				// answered: what ran inside stopped the sandbox.
				return &sandbox.ExitedError{ExitCode: he.ExitCode, OOMKilled: strings.Contains(fmt.Sprint(he.Err), "OOM killer"),
					Err: fmt.Errorf("%s: sandbox %s stopped: %v", op, shortID(s.id), he)}
			}
			return exited
		}
	}
	return engineError(ctx, op, err)
}

// killExec kills the processes of the exec tagged with marker: as root
// (its processes and all their descendants) and, when the exec ran as
// another user, as that user too (that user's processes are readable only
// by it).
func (s *dockerSandbox) killExec(ctx context.Context, marker, user string) {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	users := []string{"root"}
	if user != "" && user != "root" && user != "0" && !strings.HasPrefix(user, "0:") {
		users = append(users, user)
	} else if user == "" {
		users = append(users, "") // the image's default user, perhaps not root
	}
	for _, u := range users {
		if err := s.runQuiet(kctx, u, "bash", "-c", sandbox.KillScript, "otcurate-kill", sandbox.ExecMarkerVar+"="+marker); err != nil {
			s.d.log.Warn("cannot kill a timed-out exec", "container", shortID(s.id), "user", u, "err", err)
		}
	}
}

// killExecAsync runs killExec in the background (after a cancel), tracked
// so Close waits for it.
func (s *dockerSandbox) killExecAsync(marker, user string) {
	s.d.bg.Add(1)
	go func() {
		defer s.d.bg.Done()
		s.killExec(context.Background(), marker, user)
	}()
}

// runQuiet runs a command and waits for it, discarding its output.
func (s *dockerSandbox) runQuiet(ctx context.Context, user string, cmd ...string) error {
	created, err := s.d.cli.ExecCreate(ctx, s.id, client.ExecCreateOptions{
		User: user, Cmd: cmd, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return err
	}
	att, err := s.d.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return err
	}
	defer att.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, att.Reader)
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		att.Close()
		<-done
		return ctx.Err()
	}
}

func (s *dockerSandbox) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}
