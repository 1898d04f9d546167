package fake

import (
	"context"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/sandbox"
)

var _ sandbox.WorkCollector = (*fakeSandbox)(nil)

// snapshotWork records the work roots as Start leaves them (the fake has
// no engine diff; see sandbox.TakeSnapshot). A tree too large to
// snapshot leaves the sandbox unable to collect its work.
func (s *fakeSandbox) snapshotWork() {
	root, err := openRoot(s.c)
	if err != nil {
		return
	}
	defer unix.Close(root)
	snap, err := sandbox.TakeSnapshot(root, s.wd)
	if err != nil {
		s.b.log.Debug("work roots not snapshotted", "sandbox", s.c.id[:12], "err", err)
		return
	}
	s.workSnap = snap
}

// Work implements sandbox.WorkCollector: the work roots now, compared
// with their snapshot at Start, entries read from the host below the
// sandbox's root with no symlink followed.
func (s *fakeSandbox) Work(ctx context.Context) (sandbox.Work, error) {
	if err := s.exitedState(); err != nil {
		return sandbox.Work{}, err
	}
	if s.workSnap == nil {
		return sandbox.Work{}, fmt.Errorf("the sandbox's work roots were not snapshotted at start: %w", sandbox.ErrWorkUnsupported)
	}
	root, err := openRoot(s.c)
	if err != nil {
		return sandbox.Work{}, err
	}
	defer unix.Close(root)
	after, err := sandbox.TakeSnapshot(root, s.wd)
	if err != nil {
		return sandbox.Work{}, err
	}
	w := sandbox.WorkReader{Root: root, Workdir: s.wd}
	if err := sandbox.DiffWork(&w, s.workSnap, after); err != nil {
		return sandbox.Work{}, err
	}
	return w.Work(), nil
}

var _ sandbox.WorkBackend = (*Backend)(nil)

// CollectsWork implements sandbox.WorkBackend: fake sandboxes always do.
func (b *Backend) CollectsWork() error { return nil }

var (
	_ sandbox.ChangeCollector = (*fakeSandbox)(nil)
	_ sandbox.RootOpener      = (*fakeSandbox)(nil)
)

// Changes implements sandbox.ChangeCollector: the overlay upper of the
// sandbox's root, reached through the launcher thread's mount namespace,
// read as Docker's is (sandbox.ReadUpper).
func (s *fakeSandbox) Changes(ctx context.Context) (sandbox.Work, error) {
	if err := s.exitedState(); err != nil {
		return sandbox.Work{}, err
	}
	root, err := openRoot(s.c)
	if err != nil {
		return sandbox.Work{}, err
	}
	defer unix.Close(root)
	dir := fmt.Sprintf("/proc/%d/task/%d/root%s/upper", os.Getpid(), s.c.launcher, s.c.dir)
	upper, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return sandbox.Work{}, fmt.Errorf("open the sandbox's writable layer: %w", err)
	}
	defer unix.Close(upper)
	w := sandbox.WorkReader{Root: root, Workdir: s.wd, All: true}
	if err := sandbox.ReadUpper(upper, &w); err != nil {
		return sandbox.Work{}, err
	}
	return w.Work(), nil
}

// OpenRoot implements sandbox.RootOpener.
func (s *fakeSandbox) OpenRoot() (int, error) { return openRoot(s.c) }
