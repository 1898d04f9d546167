// Package fake is a sandbox.Backend for fast tests of stage, trial,
// harness and trainer logic. It does NOT isolate anything: it is a test
// backend, never a security boundary. A sandbox is a process tree in new
// mount, PID, UTS, IPC (and, without StartSpec.Network, network)
// namespaces whose root is an overlay of the host's own root filesystem, so
// tasks' absolute paths (/app, /tests, /logs, /tmp) are private to each
// sandbox while the programs are the host's.
//
// What it honours, with the Docker backend's semantics:
//   - Build interprets the common Dockerfile instructions (FROM, ARG, ENV,
//     WORKDIR, USER, COPY, ADD of local files, RUN, SHELL, CMD, ENTRYPOINT;
//     LABEL, EXPOSE, VOLUME, HEALTHCHECK and STOPSIGNAL are accepted and
//     ignored). Any FROM image maps to the host's root filesystem (with a
//     warning; FROM python also gets python and pip commands when the host
//     has only python3 and pip3); an instruction it cannot honour is a *sandbox.BuildError
//     saying so. The result is one directory layer per environment hash,
//     cached on disk.
//   - Exec runs `bash -c` as a user of the image (switched with setpriv),
//     in a workdir, with the image's, the sandbox's and the request's
//     environment; a timeout kills every process of the exec (tagged with
//     sandbox.ExecMarkerVar) and is a result, not an error; output is
//     capped head and tail.
//   - Upload, Download, terminals (a pseudo-terminal), healthchecks,
//     entrypoints, /logs/{agent,verifier,artifacts} (mode 777), Stop (kills
//     the whole PID namespace) and GC (by run id and owner).
//
// Resources (CPU, memory, pids) are not enforced. The host's directories
// other than /bin, /sbin, /lib*, /usr, /etc, /opt and /var (and /var/tmp,
// /var/lib/docker and /var/lib/containerd) are hidden from sandboxes, which
// get empty /tmp, /root, /home, /run, /mnt, /media and /srv of their own:
// a convenience against accidents, not isolation.
//
// It needs root (CAP_SYS_ADMIN for namespaces and overlay mounts) and the
// util-linux tools nsenter and setpriv, plus bash, env and ip (optional) on
// the host.
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

	"golang.org/x/sys/unix"

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
	// mask is the template of the whiteouts that hide host entries.
	mask string

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
var tools = []string{"nsenter", "setpriv", "bash", "env", "mount", "chroot", "mknod"}

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
	mask, err := makeMask(dir)
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
		mask:       mask,
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
	if err := os.RemoveAll(b.mask); err != nil {
		errs = append(errs, err)
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

// makeMask writes the whiteouts (0/0 character devices) that hide the
// host's non-system entries into a fresh template directory below dir,
// which every init copies to its tmpfs. Close removes it.
func makeMask(dir string) (string, error) {
	tmp, err := os.MkdirTemp(dir, ".mask-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	ents, err := os.ReadDir("/")
	if err != nil {
		return "", err
	}
	whiteout := func(name string) error {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tmp, name)), 0o755); err != nil {
			return err
		}
		return unix.Mknod(filepath.Join(tmp, name), unix.S_IFCHR, 0)
	}
	for _, e := range ents {
		if !systemEntries[e.Name()] {
			if err := whiteout(e.Name()); err != nil {
				return "", fmt.Errorf("mask template: %w", err)
			}
		}
	}
	for _, p := range hiddenBelow {
		if _, err := os.Lstat("/" + p); err == nil {
			if err := whiteout(p); err != nil {
				return "", fmt.Errorf("mask template: %w", err)
			}
		}
	}
	return tmp, nil
}

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
