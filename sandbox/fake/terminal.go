package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/sandbox"
)

// terminal is a process on a pseudo-terminal: reads and writes go to the
// master side.
type terminal struct {
	master *os.File
	done   chan struct{} // closed when the process (nsenter) has exited
	once   sync.Once
}

// OpenTerminal starts spec.Cmd on a new pseudo-terminal inside the
// sandbox, as the session leader with the terminal as its controlling
// tty. Its processes carry an exec marker.
func (s *fakeSandbox) OpenTerminal(ctx context.Context, spec sandbox.TerminalSpec) (sandbox.Terminal, error) {
	if s.isStopped() {
		return nil, errStopped
	}
	spec = spec.WithDefaults()
	env := spec.Env
	if _, ok := env["TERM"]; !ok && !hasKey(s.env, "TERM") {
		env = mergeMap(env, map[string]string{"TERM": "xterm"})
	}
	p := s.proc(spec.User, spec.Workdir, env, spec.Cmd)
	p.marker = sandbox.NewExecMarker()
	cmd, startErr, err := s.c.command(p)
	if err != nil {
		return nil, err
	}
	if cmd == nil {
		return nil, fmt.Errorf("terminal: %s", startErr)
	}
	master, slave, err := openPTY(spec.Cols, spec.Rows)
	if err != nil {
		return nil, infra("terminal", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0} // no Pdeathsig: see run
	err = cmd.Start()
	slave.Close()
	if err != nil {
		master.Close()
		return nil, infra("terminal", err)
	}
	t := &terminal{master: master, done: make(chan struct{})}
	s.c.addWrapper(cmd.Process)
	go func() {
		_ = cmd.Wait()
		s.c.dropWrapper(cmd.Process)
		close(t.done)
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		_ = t.Close()
		return nil, errStopped
	}
	s.terminals = append(s.terminals, t)
	return t, nil
}

// Read returns terminal output; the end of the session is io.EOF.
func (t *terminal) Read(p []byte) (int, error) {
	n, err := t.master.Read(p)
	if err != nil && (errors.Is(err, syscall.EIO) || errors.Is(err, os.ErrClosed)) {
		err = io.EOF
	}
	return n, err
}

// Write sends keystrokes.
func (t *terminal) Write(p []byte) (int, error) { return t.master.Write(p) }

// Close hangs up: the shell gets SIGHUP and exits; what it started in the
// background lives on until the sandbox stops, as in the Docker backend.
// It is idempotent.
func (t *terminal) Close() error {
	t.once.Do(func() { _ = t.master.Close() })
	return nil
}

// openPTY opens a new pseudo-terminal pair of the given size.
func openPTY(cols, rows int) (master, slave *os.File, err error) {
	// Non-blocking, so the os.File uses the runtime poller and a Close
	// ends a Read blocked on it (a blocking read would hold the master
	// open, and the shell would never get its hangup).
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	m := os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("pty size: %w", err)
	}
	sl, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, sl, nil
}

func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if len(kv) > len(key) && kv[:len(key)+1] == key+"=" {
			return true
		}
	}
	return false
}

func mergeMap(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
