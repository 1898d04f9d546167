package fake

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/sandbox"
)

// logDirs are created world-writable in every sandbox, as Harbor does.
var logDirs = []string{"/logs/agent", "/logs/verifier", "/logs/artifacts"}

// containerSpec is what an init process is started with.
type containerSpec struct {
	kind     string   // "sandbox" or "build"
	layers   []string // image layers, topmost first
	upper    string   // writable layer on disk ("" = a tmpfs that dies with the sandbox)
	work     string   // overlay workdir beside upper
	network  bool
	labels   map[string]string
	mainArgv []string // the main process inside the root; default sleep infinity
}

// container is a running init process and its namespaces.
type container struct {
	id    string
	dir   string // state directory on the host (the tmpfs mount point)
	pid   int    // host PID of the init (PID 1 inside)
	start uint64 // its start time, to recognise it (PID reuse)
	cmd   *exec.Cmd
	log   *sandbox.HeadTail // the init's own output (the entrypoint's)

	exited   chan struct{} // closed when the init has exited
	exitCode int           // valid after exited
	exitErr  error
	logMu    sync.Mutex

	pidNS nsID // the init's PID namespace, as this host sees it
	// launcher is the thread that made the sandbox's mount namespace and
	// waits for its init: through it this process reaches the state
	// directory's tmpfs (the overlay upper) that only that namespace has.
	launcher int

	// wrappers: the nsenter processes of running execs and terminals
	// (see procs.go for why Stop must keep them reaping).
	wrapMu   sync.Mutex
	wrappers map[*os.Process]struct{}
}

// meta is the label file of a sandbox's state directory, read by GC.
type meta struct {
	Kind   string            `json:"kind"`
	Run    string            `json:"run"`
	Owner  string            `json:"owner"`
	Pid    int               `json:"pid"`
	Start  uint64            `json:"start"`
	Labels map[string]string `json:"labels,omitempty"`
}

// newID is a random container ID (64 hex digits, like Docker's).
func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startContainer starts an init process and waits until its root is ready.
func (b *Backend) startContainer(ctx context.Context, spec containerSpec) (*container, error) {
	c := &container{id: newID(), log: sandbox.NewTail(4 << 10), exited: make(chan struct{})}
	c.dir = filepath.Join(sandboxesDir(b.dir), c.id[:16])
	if err := os.Mkdir(c.dir, 0o700); err != nil {
		return nil, infra("create sandbox state", err)
	}
	m := meta{Kind: spec.kind, Run: b.runID, Owner: b.owner, Labels: spec.labels}
	if err := writeMeta(c.dir, m); err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, infra("create sandbox state", err)
	}
	main := spec.mainArgv
	if len(main) == 0 {
		main = []string{"sleep", "infinity"}
	}
	cmd := exec.Command("/bin/bash", append([]string{"-c", reaper, "otcurate-init"}, main...)...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + defaultPath}
	cmd.Stdout, cmd.Stderr = (*lockedWriter)(c), (*lockedWriter)(c)
	ready, readyW, err := os.Pipe()
	if err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, infra("start sandbox", err)
	}
	defer ready.Close()
	cmd.ExtraFiles = []*os.File{readyW}
	// Pdeathsig: if this process dies, the init (and with it the whole PID
	// namespace and its mounts) dies too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	c.cmd = cmd
	if err := b.launch(c, spec, cmd); err != nil {
		readyW.Close()
		_ = os.RemoveAll(c.dir)
		return nil, infra("start sandbox", err)
	}
	readyW.Close()
	c.pid = cmd.Process.Pid
	c.start, _ = procStart(c.pid)

	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(ready).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if strings.TrimSpace(s) == "ready" {
			break
		}
		<-c.exited
		c.remove()
		return nil, infra("start sandbox", fmt.Errorf("the init exited with code %d: %s", c.exitCode, strings.TrimSpace(c.logText())))
	case <-ctx.Done():
		c.kill()
		c.remove()
		return nil, fmt.Errorf("start sandbox: %w", ctx.Err())
	}
	if err := c.checkAlive(); err != nil {
		c.kill()
		c.remove()
		return nil, err
	}
	if c.pidNS, err = pidNamespace(c.pid); err != nil {
		c.kill()
		c.remove()
		return nil, infra("start sandbox", err)
	}
	m.Pid, m.Start = c.pid, c.start
	if err := writeMeta(c.dir, m); err != nil {
		c.kill()
		c.remove()
		return nil, infra("write sandbox state", err)
	}
	return c, nil
}

// lockedWriter appends the init's output to its log.
type lockedWriter container

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	return w.log.Write(p)
}

func (c *container) logText() string {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return c.log.String()
}

// wait reaps the init and records its exit.
func (c *container) wait() {
	err := c.cmd.Wait()
	c.exitCode = exitCode(c.cmd.ProcessState)
	c.exitErr = err
	close(c.exited)
}

// alive reports whether the init still runs.
func (c *container) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

const (
	// killGrace is how long kill lets the wrappers reap their children
	// (continued every killTick) before it kills them too.
	killGrace = 5 * time.Second
	killTick  = 50 * time.Millisecond
	// killBound is how long kill waits for the init at most.
	killBound = 30 * time.Second
)

// kill ends the init; the kernel then kills every process of its PID
// namespace, and the mount namespace with its mounts goes away. The init
// finishes exiting only once every process of the namespace is reaped,
// including those whose parent is an nsenter wrapper outside it: kill
// keeps the wrappers running (SIGCONT) so they reap, kills them after
// killGrace (their dead children then go to this host's init or a
// subreaper), and gives up after killBound with an error naming what is
// left (the goroutine waiting for the init then ends whenever the kernel
// lets it). It returns in bounded time.
func (c *container) kill() error {
	if c.alive() {
		c.signalWrappers(syscall.SIGCONT)
		_ = c.cmd.Process.Kill()
	}
	select {
	case <-c.exited:
		return nil
	default:
	}
	start := time.Now()
	tick := time.NewTicker(killTick)
	defer tick.Stop()
	for {
		select {
		case <-c.exited:
			return nil
		case <-tick.C:
		}
		c.signalWrappers(syscall.SIGCONT)
		if time.Since(start) > killGrace {
			c.signalWrappers(syscall.SIGKILL)
		}
		if time.Since(start) > killBound {
			var left []string
			if procs, err := nsProcs(c.pidNS); err == nil {
				for _, p := range procs {
					left = append(left, fmt.Sprintf("%d(%c, parent %d)", p.pid, p.state, p.ppid))
				}
			}
			return fmt.Errorf("the init (pid %d) did not exit within %s; %d wrappers running; processes left in its namespace: %s",
				c.pid, killBound, c.wrapperCount(), strings.Join(left, " "))
		}
	}
}

// remove deletes the state directory (the tmpfs was mounted only inside
// the dead mount namespace; on the host it is an empty directory).
func (c *container) remove() error {
	return os.RemoveAll(c.dir)
}

// root is the path of the sandbox's root filesystem from the host.
func (c *container) root() string { return "/proc/" + strconv.Itoa(c.pid) + "/root" }

// checkAlive verifies that the PID is still this container's init and
// that its root is the sandbox's, not (yet, or by a bug) the host's: every
// file operation and exec goes through /proc/PID/root.
func (c *container) checkAlive() error {
	fd, err := unix.Open(c.root(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if !c.alive() {
			return c.checkRoot(-1)
		}
		return errStopped
	}
	defer unix.Close(fd)
	return c.checkRoot(fd)
}

// checkRoot verifies, after fd was opened on /proc/PID/root, that PID was
// still this container's init and fd is not the host's root.
func (c *container) checkRoot(fd int) error {
	if !c.alive() {
		<-c.exited
		return infra("sandbox "+c.id[:12], fmt.Errorf("%w: its main process exited with code %d", errStopped, c.exitCode))
	}
	if st, err := procStart(c.pid); err != nil || st != c.start {
		return errStopped
	}
	var host, root unix.Stat_t
	if err := unix.Stat("/", &host); err != nil {
		return infra("stat /", err)
	}
	if err := unix.Fstat(fd, &root); err != nil {
		return errStopped
	}
	if host.Dev == root.Dev && host.Ino == root.Ino {
		return infra("sandbox "+c.id[:12], errors.New("its root is the host's root"))
	}
	return nil
}

var errStopped = errors.New("sandbox is stopped")

// procStart is the start time (clock ticks since boot) of a process, field
// 22 of /proc/PID/stat.
func procStart(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("bad stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func writeMeta(dir string, m meta) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".meta.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ".meta.json"))
}

func readMeta(dir string) (meta, error) {
	var m meta
	data, err := os.ReadFile(filepath.Join(dir, ".meta.json"))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(data, &m)
}

// defaultPath is Docker's PATH for an image that sets none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// exitCode maps a process state to a shell-style exit code (128+signal).
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// infra wraps a failure of the host as a *sandbox.InfraError.
func infra(op string, err error) error {
	return &sandbox.InfraError{Kind: "engine_error", Err: fmt.Errorf("fake: %s: %w", op, err)}
}

// sleepCtx waits for d or ctx.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
