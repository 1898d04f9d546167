package docker

import (
	"context"
	"sync"

	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/sandbox"
)

// dockerTerminal is an exec with a TTY, attached for reading and writing.
type dockerTerminal struct {
	att client.HijackedResponse

	once sync.Once
}

// OpenTerminal starts spec.Cmd on a TTY inside the container. Its
// processes carry an exec marker, so Close kills all of them, including
// what the agent left running in the background.
func (s *dockerSandbox) OpenTerminal(ctx context.Context, spec sandbox.TerminalSpec) (sandbox.Terminal, error) {
	if s.isStopped() {
		return nil, errSandboxStopped
	}
	spec = spec.WithDefaults()
	marker := sandbox.NewExecMarker()
	size := client.ConsoleSize{Height: uint(spec.Rows), Width: uint(spec.Cols)}
	created, err := s.d.cli.ExecCreate(ctx, s.id, client.ExecCreateOptions{
		User:         spec.User,
		WorkingDir:   spec.Workdir,
		Env:          append(sandbox.EnvList(spec.Env), sandbox.ExecMarkerVar+"="+marker),
		Cmd:          spec.Cmd,
		TTY:          true,
		ConsoleSize:  size,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return nil, s.execError(ctx, "terminal create", err)
	}
	att, err := s.d.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: true, ConsoleSize: size})
	if err != nil {
		return nil, s.execError(ctx, "terminal attach", err)
	}
	// Engines before API 1.42 ignore the size given at the start of an
	// exec (the TTY stays 0×0): set it again, harmless on newer ones.
	if _, err := s.d.cli.ExecResize(ctx, created.ID, client.ExecResizeOptions{Height: size.Height, Width: size.Width}); err != nil {
		att.Close()
		return nil, s.execError(ctx, "terminal resize", err)
	}
	t := &dockerTerminal{att: att.HijackedResponse}
	s.mu.Lock()
	s.terminals = append(s.terminals, t)
	s.mu.Unlock()
	return t, nil
}

// Read returns terminal output (a TTY has a single raw stream).
func (t *dockerTerminal) Read(p []byte) (int, error) { return t.att.Reader.Read(p) }

// Write sends keystrokes.
func (t *dockerTerminal) Write(p []byte) (int, error) { return t.att.Conn.Write(p) }

// Close closes the stream: the shell gets a hangup and exits. Processes
// it started in the background keep running, as they do in the reference
// harness's tmux session while the verifier runs; Stop ends them with the
// sandbox. Close is idempotent.
func (t *dockerTerminal) Close() error {
	t.once.Do(func() { t.att.Close() })
	return nil
}
