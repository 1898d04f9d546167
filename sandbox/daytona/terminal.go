package daytona

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/otcurate/otcurate/sandbox"
)

// Interactive terminals on Daytona go through tmux inside the sandbox, as
// in the reference harness (Harbor drives tmux through Daytona sessions):
// the process runs in a detached tmux session whose pane output tmux
// appends to a file (pipe-pane); keystrokes are pasted into the pane
// (paste-buffer: LF becomes CR, the Enter key) and the file is read from
// an offset. Every read and write is one toolbox call, so reads poll with
// a backoff (pollMin to pollMax) while the terminal is quiet. The image
// needs tmux (the offline base image has it); without it OpenTerminal
// fails with a backend_unsupported infrastructure error.
const (
	pollMin   = 50 * time.Millisecond
	pollMax   = 500 * time.Millisecond
	readChunk = 256 << 10
)

// exitNoTmux is the setup script's exit code when the image lacks tmux.
const exitNoTmux = 127

type daytonaTerminal struct {
	s  *daytonaSandbox
	id string // tmux session and file prefix in /tmp

	rmu     sync.Mutex // one reader
	off     int64      // bytes of the output file consumed
	pending []byte
	ended   bool
	delay   time.Duration

	wmu    sync.Mutex // one writer at a time
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// OpenTerminal implements sandbox.Sandbox.
func (s *daytonaSandbox) OpenTerminal(ctx context.Context, spec sandbox.TerminalSpec) (sandbox.Terminal, error) {
	s.dirty.Store(true)
	spec = spec.WithDefaults()
	id := fmt.Sprintf("otc-term-%016x", rand.Uint64())
	wd := spec.Workdir
	if wd == "" {
		wd = s.workdir
	}
	// The launcher waits until pipe-pane is attached, so the first prompt
	// is not lost.
	var sc strings.Builder
	fmt.Fprintf(&sc, "while [ ! -e /tmp/%s.go ]; do sleep 0.05; done\nrm -f /tmp/%s.go\n", id, id)
	if wd != "" {
		fmt.Fprintf(&sc, "cd %s || exit 1\n", shq(wd))
	}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&sc, "export %s=%s\n", k, shq(spec.Env[k]))
	}
	sc.WriteString("exec")
	for _, a := range spec.Cmd {
		sc.WriteString(" " + shq(a))
	}
	sc.WriteString("\n")
	var launch strings.Builder
	for _, a := range append(sandbox.AsUserArgv(spec.User), "bash", "/tmp/"+id+".sh") {
		launch.WriteString(shq(a) + " ")
	}
	setup := fmt.Sprintf(`command -v tmux >/dev/null || { echo "no tmux in the image" >&2; exit %d; }
printf %%s %s | base64 -d > /tmp/%s.sh && chmod 755 /tmp/%s.sh && : > /tmp/%s.out &&
tmux new-session -d -s %s -x %d -y %d %s &&
tmux pipe-pane -t %s -o %s && touch /tmp/%s.go`,
		exitNoTmux, base64.StdEncoding.EncodeToString([]byte(sc.String())), id, id, id,
		id, spec.Cols, spec.Rows, shq(launch.String()), id, shq("cat >> /tmp/"+id+".out"), id)
	r, err := s.Exec(ctx, sandbox.ExecRequest{Cmd: setup, User: "root"})
	if err != nil {
		return nil, err
	}
	switch {
	case r.ExitCode == exitNoTmux:
		return nil, &sandbox.InfraError{Kind: "backend_unsupported",
			Err: fmt.Errorf("the daytona backend's terminals run in tmux, and the image has none: %s", bytes.TrimSpace(r.Stdout))}
	case r.ExitCode != 0:
		return nil, &sandbox.InfraError{Kind: "engine_error", Err: fmt.Errorf("starting a terminal: exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stdout))}
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &daytonaTerminal{s: s, id: id, delay: pollMin, ctx: tctx, cancel: cancel}, nil
}

// Read returns terminal output; io.EOF once the process has exited and
// its output is consumed, or after Close.
func (t *daytonaTerminal) Read(p []byte) (int, error) {
	t.rmu.Lock()
	defer t.rmu.Unlock()
	for {
		if len(t.pending) > 0 {
			n := copy(p, t.pending)
			t.pending = t.pending[n:]
			return n, nil
		}
		if t.ended || t.ctx.Err() != nil {
			return 0, io.EOF
		}
		script := fmt.Sprintf("tail -c +%d /tmp/%s.out 2>/dev/null | head -c %d | base64 -w0; echo; tmux has-session -t %s 2>/dev/null && echo alive || echo ended",
			t.off+1, t.id, readChunk, t.id)
		r, err := t.s.Exec(t.ctx, sandbox.ExecRequest{Cmd: script, User: "root", Timeout: time.Minute})
		if err != nil {
			if t.ctx.Err() != nil {
				return 0, io.EOF
			}
			return 0, err
		}
		lines := strings.Split(strings.TrimRight(string(r.Stdout), "\n"), "\n")
		if len(lines) < 2 {
			return 0, &sandbox.InfraError{Kind: "engine_error", Err: fmt.Errorf("terminal read: unexpected reply %q", r.Stdout)}
		}
		data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(lines[0]))
		if err != nil {
			return 0, &sandbox.InfraError{Kind: "engine_error", Err: fmt.Errorf("terminal read: %w", err)}
		}
		t.off += int64(len(data))
		t.pending = data
		if len(data) > 0 {
			t.delay = pollMin
			continue
		}
		if strings.TrimSpace(lines[len(lines)-1]) == "ended" {
			t.ended = true
			continue
		}
		select {
		case <-t.ctx.Done():
		case <-time.After(t.delay):
		}
		t.delay = min(2*t.delay, pollMax)
	}
}

// Write sends keystrokes (pasted into the pane; LF arrives as CR).
func (t *daytonaTerminal) Write(p []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if t.ctx.Err() != nil {
		return 0, io.ErrClosedPipe
	}
	script := fmt.Sprintf("printf %%s %s | base64 -d > /tmp/%s.in && tmux load-buffer -b %s /tmp/%s.in && tmux paste-buffer -b %s -t %s -d",
		base64.StdEncoding.EncodeToString(p), t.id, t.id, t.id, t.id, t.id)
	r, err := t.s.Exec(t.ctx, sandbox.ExecRequest{Cmd: script, User: "root", Timeout: time.Minute})
	if err != nil {
		return 0, err
	}
	if r.ExitCode != 0 {
		return 0, io.ErrClosedPipe // the session has ended
	}
	return len(p), nil
}

// Close hangs up: the tmux session is killed (the process gets SIGHUP).
// Idempotent.
func (t *daytonaTerminal) Close() error {
	t.once.Do(func() {
		t.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = t.s.Exec(ctx, sandbox.ExecRequest{Cmd: fmt.Sprintf("tmux kill-session -t %s 2>/dev/null; rm -f /tmp/%s.*", t.id, t.id), User: "root"})
	})
	return nil
}
