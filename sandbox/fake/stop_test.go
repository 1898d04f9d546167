package fake

import (
	"context"
	"errors"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox"
)

// drain reads a terminal until it ends; the channel closes then.
func drain(term sandbox.Terminal) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := make([]byte, 4096)
		for {
			if _, err := term.Read(p); err != nil {
				return
			}
		}
	}()
	return done
}

// stopWithin fails the test when Stop takes longer than d.
func stopWithin(t *testing.T, sb sandbox.Sandbox, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- sb.Stop(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-time.After(d):
		t.Fatalf("Stop still runs after %s", d)
	}
}

// waitState waits until the process is in one of the states (ps letters).
func waitState(t *testing.T, pid int, states string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, ok := readProc(pid)
		if ok && strings.IndexByte(states, p.state) >= 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d: state %c, want one of %q", pid, p.state, states)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKillAllHostSide: KillAll kills, from this host, every process that
// was not running when Start returned (a daemon that keeps forking, without the exec
// marker, a stopped process, a terminal's shell and its command) and
// spares the main process; the terminal's wrapper is never left stopped,
// and Stop is quick after it.
func TestKillAllHostSide(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a forking daemon")
	}
	// Its setup exec used to time out now and then: sleep 78 was stopped
	// between fork and exec, before its redirection, so the stopped child
	// held the exec's output open. It is now stopped once it is sleep.
	b := newSerialBackend(t) // its forking daemon slows parallel tests down
	ctx := context.Background()
	sb := start(t, b, "FROM debian:bookworm\n")
	fs := sb.(*fakeSandbox)
	ps := func() string {
		return string(run(t, sb, sandbox.ExecRequest{Cmd: `for d in /proc/[0-9]*; do [ "${d##*/}" = $$ ] || tr '\0' ' ' < $d/cmdline 2>/dev/null; echo; done`, User: "root"}).Stdout)
	}
	term, err := sb.OpenTerminal(ctx, sandbox.TerminalSpec{Cmd: []string{"bash", "--noediting", "--noprofile", "--norc", "-i"}})
	if err != nil {
		t.Fatal(err)
	}
	ended := drain(term)
	if _, err := term.Write([]byte("sleep 79\n")); err != nil {
		t.Fatal(err)
	}
	run(t, sb, sandbox.ExecRequest{Cmd: `env -i setsid nohup bash -c 'exec -a kworker/agent bash -c "while :; do (sleep 77 &); sleep 0.05; done"' >/dev/null 2>&1 &
{ sleep 78 & } >/dev/null 2>&1; p=$!; for i in $(seq 500); do [ "$(tr '\0' ' ' </proc/$p/cmdline 2>/dev/null)" = "sleep 78 " ] && break; sleep 0.01; done; kill -STOP $p; for i in $(seq 200); do pgrep -x sleep >/dev/null && [ -n "$(pgrep -f 'sleep 79')" ] && break; sleep 0.05; done`,
		Timeout: time.Minute})
	if got := ps(); !strings.Contains(got, "sleep 77") || !strings.Contains(got, "sleep 78") || !strings.Contains(got, "sleep 79") {
		t.Fatalf("the agent's processes did not start:\n%s", got)
	}
	for range 3 { // repeated: each pass must succeed, never kill itself
		if err := sb.KillAll(ctx); err != nil {
			t.Fatalf("KillAll: %v", err)
		}
	}
	after := ps()
	if strings.Contains(after, "sleep 7") || strings.Contains(after, "kworker") || strings.Contains(after, "bash --noediting") {
		t.Errorf("processes survive KillAll:\n%s", after)
	}
	if !strings.Contains(after, "sleep infinity") {
		t.Errorf("KillAll killed the main process:\n%s", after)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Error("the terminal did not end after KillAll")
	}
	deadline := time.Now().Add(10 * time.Second)
	for fs.c.wrapperCount() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := fs.c.wrapperCount(); n > 0 {
		t.Errorf("%d wrappers still run after KillAll", n)
	}
	t0 := time.Now()
	stopWithin(t, sb, killGrace)
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("Stop took %s", d)
	}
	if err := sb.KillAll(ctx); !errors.Is(err, errStopped) {
		t.Errorf("KillAll after Stop: %v, want %v", err, errStopped)
	}
}

// TestKillAllExited: a sandbox whose main process the agent killed is an
// *sandbox.ExitedError, not an infrastructure failure.
func TestKillAllExited(t *testing.T) {
	b := newBackend(t)
	sb := start(t, b, "FROM debian:bookworm\n")
	_, _ = sb.Exec(context.Background(), sandbox.ExecRequest{Cmd: "kill -9 -1", User: "root"})
	err := sb.KillAll(context.Background())
	var ee *sandbox.ExitedError
	if !errors.As(err, &ee) || sandbox.IsInfra(err) {
		t.Fatalf("KillAll after kill -9 -1: %v (%T), want an *sandbox.ExitedError", err, err)
	}
}

// TestStopWithStoppedWrapper is the hang of long training runs: the
// harness closed the agent's terminal while a command still ran in it,
// with SIGHUP ignored (the run was started with nohup), so the terminal's
// nsenter and shell lived on; the shell was then stopped (as the former
// shell KillAll did with SIGSTOP, racing its SIGKILL under load), so
// nsenter stopped itself; the shell then died, a zombie its stopped
// parent outside the PID namespace never reaped, and the init's exit,
// hence Stop, waited forever. Stop must end in bounded time.
//
// It runs after the other serial tests of this file: with SIGHUP ignored
// and reset, TestKillAllHostSide's exec was seen to time out (not
// understood yet).
func TestStopWithStoppedWrapper(t *testing.T) {
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	b := newSerialBackend(t)
	ctx := context.Background()
	img, err := b.Build(ctx, env("FROM debian:bookworm\n"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatal(err)
	}
	fs := sb.(*fakeSandbox)
	term, err := sb.OpenTerminal(ctx, sandbox.TerminalSpec{Cmd: []string{"bash", "--noediting", "--noprofile", "--norc", "-i"}})
	if err != nil {
		t.Fatal(err)
	}
	ended := drain(term)
	if _, err := term.Write([]byte("echo $$ > /tmp/shell.pid; sleep 1000\n")); err != nil {
		t.Fatal(err)
	}
	run(t, sb, sandbox.ExecRequest{Cmd: "for i in $(seq 200); do pgrep -x 'sleep' >/dev/null && [ -s /tmp/shell.pid ] && exit 0; sleep 0.05; done; exit 1", User: "root"})
	var wrapper int
	fs.c.wrapMu.Lock()
	for p := range fs.c.wrappers {
		wrapper = p.Pid
	}
	fs.c.wrapMu.Unlock()
	if wrapper == 0 {
		t.Fatal("no terminal wrapper is tracked")
	}
	if err := term.Close(); err != nil {
		t.Fatal(err)
	}
	<-ended
	run(t, sb, sandbox.ExecRequest{Cmd: "kill -STOP $(cat /tmp/shell.pid)", User: "root"})
	waitState(t, wrapper, "T")
	// The shell dies while its nsenter is stopped.
	run(t, sb, sandbox.ExecRequest{Cmd: "kill -KILL $(cat /tmp/shell.pid)", User: "root"})
	stopWithin(t, sb, 2*killGrace)
}
