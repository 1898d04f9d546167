package fake

import (
	"context"
	"io/fs"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// The verifier-isolation methods. The fake isolates nothing, so it does
// not try to be stronger than the weakest backend: KillAll, ReadFile and
// ResetDir are sandbox.ShellIsolation (bash and coreutils run as root in
// the sandbox, here this machine's own programs), against the process
// snapshot taken when Start returned. NetAttempts reads the sandbox's
// network-namespace counters from this host, as Docker's direct mode does,
// so the network verdict behaves as on a local engine.

func (s *fakeSandbox) shell() sandbox.ShellIsolation {
	return sandbox.ShellIsolation{SB: s, Baseline: s.baseline}
}

// recordBaseline remembers the processes running when Start returns
// (the init, the entrypoint and its services): KillAll spares them.
func (s *fakeSandbox) recordBaseline(ctx context.Context) error {
	snap, err := sandbox.ShellSnapshot(ctx, s)
	if err != nil {
		return err
	}
	s.baseline = snap
	return nil
}

// KillAll implements sandbox.Sandbox.KillAll.
func (s *fakeSandbox) KillAll(ctx context.Context) error {
	if err := s.exitedState(); err != nil {
		return err
	}
	return s.shell().KillAll(ctx)
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
