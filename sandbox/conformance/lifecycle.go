package conformance

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox"
)

// testNetwork: a sandbox without Network reaches nothing. Without a probe
// the check is that it has no interface but lo (and one with Network has
// another); with Harness.NetworkProbe, that a TCP connection to the probe
// succeeds with Network and fails without.
func (s *suite) testNetwork(t *testing.T) {
	t.Parallel()
	off := s.sandbox(t, sandbox.StartSpec{})
	on := s.sandbox(t, sandbox.StartSpec{Network: true})
	if s.h.NetworkProbe == "" {
		if out := stdout(t, off, sandbox.ExecRequest{Cmd: "ls /sys/class/net"}); strings.Join(strings.Fields(out), " ") != "lo" {
			t.Errorf("interfaces without network: %q, want lo alone", out)
		}
		if out := stdout(t, on, sandbox.ExecRequest{Cmd: "ls /sys/class/net"}); len(strings.Fields(out)) < 2 {
			t.Errorf("interfaces with network: %q, want lo and another", out)
		}
		return
	}
	host, port, err := net.SplitHostPort(s.h.NetworkProbe)
	if err != nil {
		t.Fatalf("NetworkProbe %q: %v", s.h.NetworkProbe, err)
	}
	probe := sandbox.ExecRequest{Cmd: "timeout 10 bash -c 'exec 3<>/dev/tcp/" + host + "/" + port + "' 2>/dev/null && echo open || echo closed", Timeout: 30 * time.Second}
	if out := stdout(t, on, probe); out != "open\n" {
		t.Errorf("%s with network: %q, want open", s.h.NetworkProbe, out)
	}
	if out := stdout(t, off, probe); out != "closed\n" {
		if s.h.NetworkUnenforced != "" {
			t.Logf("%s without network: %q; not enforced here: %s", s.h.NetworkProbe, out, s.h.NetworkUnenforced)
			return
		}
		t.Errorf("%s without network: %q, want closed", s.h.NetworkProbe, out)
	}
}

// screen collects what a terminal shows, read in the background.
type screen struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{} // closed when Read fails (the terminal ended)
}

func watch(term sandbox.Terminal) *screen {
	sc := &screen{done: make(chan struct{})}
	go func() {
		defer close(sc.done)
		p := make([]byte, 4096)
		for {
			n, err := term.Read(p)
			sc.mu.Lock()
			sc.buf.Write(p[:n])
			sc.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return sc
}

func (sc *screen) String() string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.buf.String()
}

// waitFor waits until the screen shows want.
func (sc *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(sc.String(), want) {
		select {
		case <-deadline:
			t.Fatalf("the terminal never showed %q; screen:\n%s", want, sc.String())
		case <-sc.done:
			if !strings.Contains(sc.String(), want) {
				t.Fatalf("the terminal ended without showing %q; screen:\n%s", want, sc.String())
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitEnd waits until reads of the terminal fail.
func (sc *screen) waitEnd(t *testing.T, after string) {
	t.Helper()
	select {
	case <-sc.done:
	case <-time.After(15 * time.Second):
		t.Errorf("reads of the terminal still block 15 s after %s", after)
	}
}

// testTerminal: keystrokes in, the screen out, with the spec's user,
// workdir and env; Close ends reads; Stop closes open terminals.
func (s *suite) testTerminal(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	ctx := context.Background()
	term, err := sb.OpenTerminal(ctx, sandbox.TerminalSpec{})
	if err != nil {
		t.Fatalf("OpenTerminal: %v", err)
	}
	sc := watch(term)
	bg := "sleep " + marker(1031)
	io.WriteString(term, "(setsid "+bg+" >/dev/null 2>&1 &); echo $((6*7))x $(id -un) $(pwd)\n")
	sc.waitFor(t, "42x root "+workdir)
	if err := term.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	sc.waitEnd(t, "Close")
	// Close hangs up the shell; what it left in the background lives on
	// until the sandbox stops.
	if running(t, sb, []string{bg}) == "" {
		t.Errorf("%q, started in the background of a terminal, ended with its Close", bg)
	}

	term, err = sb.OpenTerminal(ctx, sandbox.TerminalSpec{User: user, Workdir: "/tmp", Env: map[string]string{"CONF_TERM": "t-env"}, Cols: 100, Rows: 30})
	if err != nil {
		t.Fatalf("OpenTerminal as %s: %v", user, err)
	}
	sc = watch(term)
	io.WriteString(term, "echo \"$(id -un)@$(pwd)@$CONF_TERM@$(stty size)\"\n")
	sc.waitFor(t, user+"@/tmp@t-env@30 100")
	// Stop closes the terminal still open.
	if err := sb.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	sc.waitEnd(t, "Stop")
	term.Close()
	s.checkGone(t, bg)
}

// testStop: Stop is idempotent, kills what runs in the background, works
// with a cancelled context, and leaves a sandbox that refuses work.
func (s *suite) testStop(t *testing.T) {
	t.Run("idempotent", func(t *testing.T) {
		t.Parallel()
		sb := s.sandbox(t, sandbox.StartSpec{})
		ctx := context.Background()
		bg := "sleep " + marker(1011)
		stdout(t, sb, sandbox.ExecRequest{Cmd: "(setsid " + bg + " >/dev/null 2>&1 &)"})
		if running(t, sb, []string{bg}) == "" {
			t.Errorf("the background %q ended with its exec; it must live until Stop", bg)
		}
		for i := range 2 {
			if err := sb.Stop(ctx); err != nil {
				t.Errorf("Stop #%d: %v", i+1, err)
			}
		}
		if _, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "true", Timeout: 10 * time.Second}); err == nil {
			t.Error("Exec on a stopped sandbox succeeded")
		}
		if _, err := sb.Download(ctx, workdir+"/"+helloFile, 10); err == nil {
			t.Error("Download from a stopped sandbox succeeded")
		}
		s.checkGone(t, bg)
	})
	t.Run("cancelled context", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		sb, err := s.b.Start(ctx, sandbox.StartSpec{Image: s.img})
		if err != nil {
			cancel()
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { sb.Stop(context.Background()) })
		bg := "sleep " + marker(1012)
		stdout(t, sb, sandbox.ExecRequest{Cmd: "(setsid " + bg + " >/dev/null 2>&1 &)"})
		cancel()
		if err := sb.Stop(ctx); err != nil {
			t.Fatalf("Stop with a cancelled context: %v", err)
		}
		if err := sb.Stop(ctx); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		if _, err := sb.Exec(context.Background(), sandbox.ExecRequest{Cmd: "true", Timeout: 10 * time.Second}); err == nil {
			t.Error("Exec on a stopped sandbox succeeded")
		}
		s.checkGone(t, bg)
	})
}

// checkGone fails the test when a process running command is still on the
// host 10 s after its sandbox went (HostProcesses only).
func (s *suite) checkGone(t *testing.T, command string) {
	t.Helper()
	if !s.h.HostProcesses {
		return
	}
	argv := strings.Fields(command)
	deadline := time.Now().Add(10 * time.Second)
	for pids := hostProcs(argv); len(pids) > 0; pids = hostProcs(argv) {
		if time.Now().After(deadline) {
			t.Errorf("%q still runs on the host (pids %v) 10 s after its sandbox went", command, pids)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hostProcs lists the pids of this host's processes whose argv is argv.
func hostProcs(argv []string) []string {
	want := strings.Join(argv, "\x00") + "\x00"
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		if b, err := os.ReadFile(dir + "/cmdline"); err == nil && string(b) == want {
			pids = append(pids, filepath.Base(dir))
		}
	}
	return pids
}

// testGC: a sandbox of a run that was never stopped (a crash) is removed
// by GC{Run: id}; ExceptRun keeps it; another run's sandbox is untouched;
// Stop after the GC is fine, and a second GC finds nothing.
func (s *suite) testGC(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, runID := s.h.Backend(t)
	img, err := b.Build(ctx, s.env(fixtureDockerfile(s.h.BaseImage)))
	if err != nil {
		t.Fatalf("Build on the second backend: %v", err)
	}
	mine := s.sandbox(t, sandbox.StartSpec{}) // of the suite's run: GC{Run: runID} keeps it
	left, err := b.Start(ctx, sandbox.StartSpec{Image: img})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	bg := "sleep " + marker(1013)
	stdout(t, left, sandbox.ExecRequest{Cmd: "(setsid " + bg + " >/dev/null 2>&1 &)"})

	if rep, err := b.GC(ctx, sandbox.GCOptions{Run: runID, ExceptRun: runID}); err != nil || len(rep.Containers) != 0 {
		t.Errorf("GC excepting the run removed %v, %v", rep.Containers, err)
	}
	stdout(t, left, sandbox.ExecRequest{Cmd: "true"})
	rep, err := b.GC(ctx, sandbox.GCOptions{Run: runID})
	if err != nil || len(rep.Containers) != 1 || !sameID(rep.Containers[0], left.ID()) {
		t.Errorf("GC of the run removed %q, %v; want the one sandbox %s", rep.Containers, err, left.ID())
	}
	if _, err := left.Exec(ctx, sandbox.ExecRequest{Cmd: "true", Timeout: 10 * time.Second}); err == nil {
		t.Error("Exec in a sandbox removed by GC succeeded")
	}
	s.checkGone(t, bg)
	if err := left.Stop(ctx); err != nil {
		t.Errorf("Stop after GC: %v", err)
	}
	if rep, err := b.GC(ctx, sandbox.GCOptions{Run: runID}); err != nil || len(rep.Containers) != 0 {
		t.Errorf("second GC removed %v, %v", rep.Containers, err)
	}
	stdout(t, mine, sandbox.ExecRequest{Cmd: "true"})
}

// sameID reports whether a GC report's entry ("<id or short id>[ <names>]")
// names the sandbox id.
func sameID(entry, id string) bool {
	f := strings.Fields(entry)
	return len(f) > 0 && id != "" && (strings.HasPrefix(id, f[0]) || strings.HasPrefix(f[0], id))
}
