package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/sandbox"
)

var _ sandbox.WorkCollector = (*dockerSandbox)(nil)

// errWorkRemote is a separate verifier sandbox asked of an engine whose
// containers this process cannot reach through /proc.
var errWorkRemote = fmt.Errorf("the agent's work is read through /proc/PID/root, which needs the engine on this host and this process root: %w", sandbox.ErrWorkUnsupported)

var (
	_ sandbox.WorkBackend = (*Engine)(nil)
	_ sandbox.WorkBackend = (*Fleet)(nil)
)

// CollectsWork implements sandbox.WorkBackend: the engine's containers
// must be reachable through /proc (the direct mode).
func (d *Engine) CollectsWork() error {
	if !d.direct() {
		return errWorkRemote
	}
	return nil
}

// CollectsWork implements sandbox.WorkBackend: every engine must collect.
func (f *Fleet) CollectsWork() error {
	for _, e := range f.engines {
		if err := e.d.CollectsWork(); err != nil {
			return fmt.Errorf("engine %s: %w", e.host, err)
		}
	}
	return nil
}

// Work implements sandbox.WorkCollector for a fleet's sandbox.
func (s *fleetSandbox) Work(ctx context.Context) (sandbox.Work, error) {
	return sandbox.CollectWork(ctx, s.Sandbox)
}

// Work implements sandbox.WorkCollector. The changed paths come from the
// container's writable layer: walked on this host when the engine
// reports an overlay upper directory this process can open (whiteouts
// are deletions, an opaque directory a deleted and re-created one), else
// from the engine's diff (what `docker diff` shows, about 0.8 s on a small
// host). Both are filtered by the work rule (sandbox.WorkPath); contents
// are read from the host below /proc/PID/root with no symlink followed.
func (s *dockerSandbox) Work(ctx context.Context) (sandbox.Work, error) {
	return s.work(ctx, true, false)
}

var _ sandbox.ChangeCollector = (*dockerSandbox)(nil)

// Changes implements sandbox.ChangeCollector: every changed path of the
// writable layer but otcurate's own (sandbox.ChangePath), read as Work is.
func (s *dockerSandbox) Changes(ctx context.Context) (sandbox.Work, error) {
	return s.work(ctx, true, true)
}

// Changes implements sandbox.ChangeCollector for a fleet's sandbox.
func (s *fleetSandbox) Changes(ctx context.Context) (sandbox.Work, error) {
	return sandbox.CollectChanges(ctx, s.Sandbox)
}

// PingEngine implements sandbox.EnginePinger: the engine hosting s.
func (s *dockerSandbox) PingEngine(ctx context.Context) error { return s.d.Ping(ctx) }

// PingEngine implements sandbox.EnginePinger for a fleet's sandbox: its
// own engine, whatever the fleet's others do.
func (s *fleetSandbox) PingEngine(ctx context.Context) error {
	return sandbox.PingEngine(ctx, s.Sandbox)
}

// OpenRoot implements sandbox.RootOpener (direct mode only).
func (s *dockerSandbox) OpenRoot() (int, error) {
	if s.direct == nil || s.isStopped() {
		return -1, errWorkRemote
	}
	return s.direct.open()
}

// OpenRoot implements sandbox.RootOpener for a fleet's sandbox.
func (s *fleetSandbox) OpenRoot() (int, error) {
	if o, ok := s.Sandbox.(sandbox.RootOpener); ok {
		return o.OpenRoot()
	}
	return -1, errWorkRemote
}

// work is Work (all: Changes); upper false skips the upper directory
// (tests compare both).
func (s *dockerSandbox) work(ctx context.Context, upper, all bool) (sandbox.Work, error) {
	if s.isStopped() {
		return sandbox.Work{}, errSandboxStopped
	}
	if s.direct == nil {
		return sandbox.Work{}, errWorkRemote
	}
	root, err := s.direct.open()
	if err != nil {
		if exited := s.exitedState(ctx); exited != nil {
			return sandbox.Work{}, exited
		}
		return sandbox.Work{}, fmt.Errorf("read the agent's work: %w", err)
	}
	defer unix.Close(root)
	w := sandbox.WorkReader{Root: root, Workdir: s.workdir, All: all}
	if upper {
		if ok, err := s.upperChanges(ctx, &w); ok || err != nil {
			if err != nil {
				return sandbox.Work{}, err
			}
			return w.Work(), nil
		}
	}
	w = sandbox.WorkReader{Root: root, Workdir: s.workdir, All: all}
	diff, err := s.d.cli.ContainerDiff(ctx, s.id, client.ContainerDiffOptions{})
	if err != nil {
		return sandbox.Work{}, engineError(ctx, "list the sandbox's changes", err)
	}
	for _, c := range diff.Changes {
		if c.Kind == container.ChangeDelete {
			w.Delete(c.Path)
			continue
		}
		if err := w.Add(c.Path); err != nil {
			return sandbox.Work{}, err
		}
	}
	return w.Work(), nil
}

// upperDir opens the container's overlay upper directory; ok false when
// there is none this process can open.
func (s *dockerSandbox) upperDir(ctx context.Context) (fd int, ok bool) {
	res, err := s.d.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
	if err != nil || res.Container.GraphDriver == nil || res.Container.GraphDriver.Name != "overlay2" {
		return -1, false
	}
	dir := res.Container.GraphDriver.Data["UpperDir"]
	if dir == "" {
		return -1, false
	}
	upper, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	return upper, true
}

// upperChanges records into w the changes of the upper directory that w's
// rule takes (sandbox.ReadUpper). ok is false when that directory cannot
// be used (the engine's diff is used instead).
func (s *dockerSandbox) upperChanges(ctx context.Context, w *sandbox.WorkReader) (ok bool, err error) {
	upper, ok := s.upperDir(ctx)
	if !ok {
		return false, nil
	}
	defer unix.Close(upper)
	probe := *w
	if err := sandbox.ReadUpper(upper, &probe); err != nil {
		if errors.Is(err, sandbox.ErrNoUpper) {
			return false, nil
		}
		return true, err
	}
	*w = probe
	return true, nil
}
