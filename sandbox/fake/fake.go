// Package fake is a sandbox.Backend for fast tests of stage, trial,
// harness and trainer logic. It does NOT isolate anything: it is a test
// backend, never a security boundary. A sandbox is a process tree in new
// mount, PID, UTS, IPC (and, without StartSpec.Network, network)
// namespaces whose root is an overlay of the host's own root filesystem, so
// tasks' absolute paths (/app, /tests, /logs, /tmp) are private to each
// sandbox while the programs are the host's: a task needs on the host what
// it needs in its base image (python3, pytest, tmux...).
//
// What it honours, with the Docker backend's semantics:
//   - Build interprets the common Dockerfile instructions (FROM, ARG, ENV,
//     WORKDIR, USER, COPY and ADD of the build context with --chown and
//     --chmod, .dockerignore, RUN, SHELL, CMD, ENTRYPOINT; LABEL, EXPOSE,
//     VOLUME, HEALTHCHECK and STOPSIGNAL are accepted and ignored). Any
//     FROM image maps to the host's root filesystem, with a warning (FROM
//     python also gets python and pip commands when the host has only
//     python3 and pip3, and pip may install system-wide). An instruction
//     it cannot honour (multi-stage builds, COPY --from, RUN --mount, ADD
//     of a URL, ONBUILD) is a *sandbox.BuildError saying so. The result is
//     one directory layer per environment hash, cached on disk.
//   - Exec runs `bash -c` as a user of the image (switched with setpriv),
//     in a workdir, with the image's, the sandbox's and the request's
//     environment; a timeout kills every process of the exec (tagged with
//     sandbox.ExecMarkerVar) and is a result, not an error; output is
//     capped head and tail.
//   - Upload, Download, terminals (a pseudo-terminal), healthchecks,
//     entrypoints, /logs/{agent,verifier,artifacts} (mode 777), Stop (kills
//     the whole PID namespace) and GC (by run id and owner).
//
// Resources (CPU, memory, pids) are not enforced. A sandbox started with
// Network shares the host's network, ports included (unless
// Options.PrivateNetwork). The host's directories other than /bin, /sbin,
// /lib*, /usr, /etc, /opt and /var (and /var/tmp, /var/lib/docker and
// /var/lib/containerd) are hidden from sandboxes, which get empty /tmp,
// /root, /home, /run, /mnt, /media and /srv of their own: a convenience
// against accidents, not isolation.
//
// It needs root (CAP_SYS_ADMIN for namespaces and overlay mounts) and the
// util-linux tools nsenter, setpriv and mount, plus bash and env, on the
// host. The namespaces and the root are prepared in Go on a locked OS
// thread, so a start forks only the init (bash), its mount of /proc and
// the main command: start, exec and stop take tens of milliseconds. If
// the process dies, its sandboxes die with it (their init has a parent
// death signal); GC removes the state directories they leave.
//
// The host root must be a filesystem overlayfs can stack on twice (ext4,
// xfs, btrfs: not an overlay itself, as inside a Docker container), or
// Options.Dir must be on another filesystem than / (a tmpfs).
package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/otcurate/otcurate/sandbox"
)

// Options configure a fake backend.
type Options struct {
	// RunID labels every sandbox and image this backend creates (GC
	// selects by it).
	RunID string
	// Dir holds the image layers and the sandboxes' state; default
	// $TMPDIR/otcurate-fake. It must be on a filesystem that supports
	// overlayfs upper directories (ext4, xfs, tmpfs).
	Dir string
	// Log receives debug and warning messages; default: discarded.
	Log *slog.Logger
	// PrivateNetwork gives every sandbox its own network namespace
	// (loopback only), even when StartSpec.Network asks for a network.
	// Without it such a sandbox shares the host's network, ports included,
	// so parallel tests of servers can collide.
	PrivateNetwork bool
}

// Backend is the fake sandbox backend. It satisfies sandbox.Backend.
type Backend struct {
	runID string
	dir   string
	log   *slog.Logger
	owner string
	// privateNet: see Options.PrivateNetwork.
	privateNet bool
	// maskNames are the host entries hidden from sandboxes.
	maskNames []string

	// ctx is cancelled by Close, which ends the builds in flight; bg
	// counts them.
	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup

	mu     sync.Mutex
	builds map[string]*buildCall // by image tag
	live   map[*fakeSandbox]bool // started and not stopped
	closed bool
}

var _ sandbox.Backend = (*Backend)(nil)

// tools are the host programs the backend runs.
var tools = []string{"nsenter", "setpriv", "bash", "env", "mount"}

// New checks that this process can run sandboxes (root, the tools) and
// prepares the state directory.
func New(opts Options) (*Backend, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("fake sandbox backend: needs root (mount and PID namespaces, overlay mounts); run the tests as root or use the Docker backend")
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			return nil, fmt.Errorf("fake sandbox backend: %s not found on PATH (util-linux and coreutils are needed): %w", t, err)
		}
	}
	dir := opts.Dir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "otcurate-fake")
	}
	for _, d := range []string{imagesDir(dir), sandboxesDir(dir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("fake sandbox backend: %w", err)
		}
	}
	mask, err := maskNames()
	if err != nil {
		return nil, fmt.Errorf("fake sandbox backend: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Backend{
		ctx:        ctx,
		cancel:     cancel,
		runID:      opts.RunID,
		dir:        dir,
		log:        log,
		owner:      sandbox.OwnerID(),
		privateNet: opts.PrivateNetwork,
		maskNames:  mask,
		builds:     make(map[string]*buildCall),
		live:       make(map[*fakeSandbox]bool),
	}, nil
}

// Dir is the state directory (image layers and sandbox state).
func (b *Backend) Dir() string { return b.dir }

// Close cancels the builds in flight and stops every sandbox this backend
// started and not yet stopped.
func (b *Backend) Close() error {
	b.cancel()
	b.bg.Wait()
	b.mu.Lock()
	b.closed = true
	live := make([]*fakeSandbox, 0, len(b.live))
	for s := range b.live {
		live = append(live, s)
	}
	b.mu.Unlock()
	var errs []error
	for _, s := range live {
		if err := s.Stop(context.Background()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// systemEntries are the host root's entries sandboxes see; every other
// one is hidden.
var systemEntries = map[string]bool{
	"bin": true, "sbin": true, "lib": true, "lib32": true, "lib64": true, "libx32": true,
	"usr": true, "etc": true, "opt": true, "var": true, "dev": true, "proc": true, "sys": true,
}

// hiddenBelow are entries below system directories that are hidden too.
var hiddenBelow = []string{"var/tmp", "var/lib/docker", "var/lib/containerd"}

func imagesDir(dir string) string    { return filepath.Join(dir, "images") }
func sandboxesDir(dir string) string { return filepath.Join(dir, "sandboxes") }

// track records a started sandbox; it fails after Close.
func (b *Backend) track(s *fakeSandbox) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errors.New("fake sandbox backend is closed")
	}
	b.live[s] = true
	return nil
}

func (b *Backend) untrack(s *fakeSandbox) {
	b.mu.Lock()
	delete(b.live, s)
	b.mu.Unlock()
}
