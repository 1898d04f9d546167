package fake

import (
	"context"
	"fmt"

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
