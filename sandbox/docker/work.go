package docker

import (
	"context"
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

// Work implements sandbox.WorkCollector: the engine's diff of the
// container's writable layer (what `docker diff` shows) filtered by the
// work rule (sandbox.WorkPath), contents read from the host below
// /proc/PID/root with no symlink followed.
func (s *dockerSandbox) Work(ctx context.Context) (sandbox.Work, error) {
	if s.isStopped() {
		return sandbox.Work{}, errSandboxStopped
	}
	if s.direct == nil {
		return sandbox.Work{}, errWorkRemote
	}
	diff, err := s.d.cli.ContainerDiff(ctx, s.id, client.ContainerDiffOptions{})
	if err != nil {
		return sandbox.Work{}, engineError(ctx, "list the sandbox's changes", err)
	}
	root, err := s.direct.open()
	if err != nil {
		if exited := s.exitedState(ctx); exited != nil {
			return sandbox.Work{}, exited
		}
		return sandbox.Work{}, fmt.Errorf("read the agent's work: %w", err)
	}
	defer unix.Close(root)
	w := sandbox.WorkReader{Root: root, Workdir: s.workdir}
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
