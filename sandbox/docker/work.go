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
var errWorkRemote = errors.New("--verifier-sandbox separate needs the engine on this host, run as root (the agent's work is read through /proc/PID/root): " + sandbox.ErrWorkUnsupported.Error())

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
