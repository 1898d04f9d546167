package kube

import (
	"context"
	"io/fs"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// The verifier-isolation methods: this backend can reach a sandbox only
// by running commands in it, so they are sandbox.ShellIsolation's (see
// there for what that guarantees and what it cannot).

// snapshot lists the processes running when Start returns; a failure
// leaves KillAll sparing only PID 1.
func (s *podSandbox) snapshot(ctx context.Context) string {
	snap, err := sandbox.ShellSnapshot(ctx, s)
	if err != nil {
		s.b.log.Warn("cannot list the sandbox's processes; KillAll will spare only PID 1", "pod", s.name, "err", err)
	}
	return snap
}

func (s *podSandbox) shell() sandbox.ShellIsolation {
	return sandbox.ShellIsolation{SB: s, Baseline: s.baseline}
}

// KillAll implements sandbox.Sandbox.
func (s *podSandbox) KillAll(ctx context.Context) error { return s.shell().KillAll(ctx) }

// ReadFile implements sandbox.Sandbox.
func (s *podSandbox) ReadFile(ctx context.Context, path string, max int64, tail bool) ([]byte, error) {
	return s.shell().ReadFile(ctx, path, max, tail)
}

// ResetDir implements sandbox.Sandbox.
func (s *podSandbox) ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error {
	return s.shell().ResetDir(ctx, dir, mode, files)
}

// NetAttempts implements sandbox.Sandbox: not observable here.
func (s *podSandbox) NetAttempts(ctx context.Context) (uint64, bool, error) {
	return s.shell().NetAttempts(ctx)
}
