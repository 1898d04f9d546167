package fake

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// The verifier-isolation methods. The fake isolates nothing, so it does
// not try to be stronger than the weakest backend: ReadFile and ResetDir
// are sandbox.ShellIsolation (bash and coreutils run as root in the
// sandbox, here this machine's own programs). KillAll works from this
// host, as Docker's direct mode does: it kills every process of the
// sandbox's PID namespace that was not there when Start returned (see
// killNamespace), with no program of the sandbox involved, so it cannot
// kill itself or the nsenter that would carry a shell loop. NetAttempts
// reads the sandbox's network-namespace counters from this host, as
// Docker's direct mode does, so the network verdict behaves as on a
// local engine.

func (s *fakeSandbox) shell() sandbox.ShellIsolation {
	return sandbox.ShellIsolation{SB: s}
}

// recordBaseline remembers the processes running when Start returns
// (the init, the entrypoint and its services): KillAll spares them.
// It waits for the init's main process (the init may not have forked it
// yet): when that is gone, the sandbox is ending.
func (s *fakeSandbox) recordBaseline(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		procs, err := nsProcs(s.c.pidNS)
		if err != nil {
			return infra("list the sandbox's processes", err)
		}
		for _, p := range procs {
			if p.ppid == s.c.pid {
				s.mainProc = p.procID
			}
		}
		if s.mainProc.pid != 0 {
			s.baseline = make(map[procID]bool, len(procs))
			for _, p := range procs {
				s.baseline[p.procID] = true
			}
			return nil
		}
		if err := s.exitedError(ctx); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return infra("list the sandbox's processes", errors.New("the init started no main process"))
		}
		if err := s.pause(ctx, 2*time.Millisecond); err != nil {
			return err
		}
	}
}

// KillAll implements sandbox.Sandbox.KillAll.
func (s *fakeSandbox) KillAll(ctx context.Context) error {
	if s.isStopped() {
		return errStopped
	}
	if err := s.exitedState(); err != nil {
		return err
	}
	err := s.c.killNamespace(ctx, s.baseline)
	if err == nil && !dying(s.mainProc) {
		return nil
	}
	// Something failed, or the main process is gone or going (the agent
	// killed it): the sandbox may be ending; give its init a moment to exit.
	select {
	case <-s.c.exited:
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	if exited := s.exitedState(); exited != nil {
		return exited
	}
	if err == nil {
		err = infra("kill the agent's processes", errors.New("the sandbox's main process is gone but its init runs"))
	}
	return err
}

// ReadFile implements sandbox.Sandbox.ReadFile.
func (s *fakeSandbox) ReadFile(ctx context.Context, p string, max int64, tail bool) ([]byte, error) {
	if err := s.exitedState(); err != nil {
		return nil, err
	}
	return s.shell().ReadFile(ctx, p, max, tail)
}

// ResetDir implements sandbox.Sandbox.ResetDir.
func (s *fakeSandbox) ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error {
	if err := s.exitedState(); err != nil {
		return err
	}
	return s.shell().ResetDir(ctx, dir, mode, files)
}

// NetAttempts implements sandbox.Sandbox.NetAttempts. A sandbox sharing
// this host's network (StartSpec.Network without PrivateNetwork) counts
// the host's attempts too: not observable.
func (s *fakeSandbox) NetAttempts(ctx context.Context) (uint64, bool, error) {
	if err := s.exitedState(); err != nil {
		return 0, false, err
	}
	if !s.privateNetNS {
		return 0, false, nil
	}
	n, err := sandbox.NetNamespaceAttempts(s.c.pid)
	if err != nil {
		if err := s.exitedState(); err != nil {
			return 0, false, err
		}
		return 0, false, nil
	}
	return n, true, nil
}

// exitedState is a *sandbox.ExitedError once the sandbox's main process
// has exited without Stop (something inside ended it), nil otherwise.
func (s *fakeSandbox) exitedState() error {
	if s.isStopped() || s.c.alive() {
		return nil
	}
	<-s.c.exited
	return &sandbox.ExitedError{ExitCode: s.c.exitCode}
}
