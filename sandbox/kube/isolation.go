package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/helper"
	"github.com/otcurate/otcurate/sandbox/helper/op"
)

// The verifier-isolation methods. This backend can reach a sandbox only
// by exec'ing in its container, so they run the static sandbox helper
// (Options.Helpers; see sandbox.ShellIsolation for what that
// guarantees): written into a fresh directory with an unpredictable name
// (created exclusively by `mkdir -m 0700`, the binary by
// `install -m 0700 /dev/stdin`, its bytes through the exec's stdin), then
// exec'd by absolute path as argv, with no shell and no env wrapper.
// KillAll always writes a fresh copy, so does any call after an Exec or
// a terminal; each copy removes the previous one. The two writing
// commands (mkdir, install) are the image's: an agent that replaced them
// can still substitute the helper. Without a helper the methods are
// sandbox.ShellIsolation's.

// snapshot lists the processes running when Start returns. With the
// helper it is the helper's snapshot, which also shows, before any code of
// the agent runs, that this image's mkdir and install can put the helper
// in and that it runs: from then on a failure of those is the sandbox's
// doing (see runHelper). An image where they cannot falls back to the
// image's shell for this sandbox, with a warning on every result. A
// failure of the shell's snapshot leaves KillAll sparing only PID 1.
func (s *podSandbox) snapshot(ctx context.Context) string {
	if h, ok := s.withHelper(); ok {
		snap, err := h.Snapshot(ctx)
		if err == nil {
			s.helperOK = true
			return snap
		}
		if ctx.Err() != nil {
			return ""
		}
		s.noHelper = err.Error()
		s.b.log.Warn("the sandbox helper cannot run in this pod; its verifier isolation goes through the image's bash and coreutils", "pod", s.name, "err", err)
	}
	snap, err := sandbox.ShellSnapshot(ctx, s)
	if err != nil {
		s.b.log.Warn("cannot list the sandbox's processes; KillAll will spare only PID 1", "pod", s.name, "err", err)
	}
	return snap
}

func (s *podSandbox) shell() sandbox.ShellIsolation {
	return sandbox.ShellIsolation{SB: s, Baseline: s.baseline}
}

func (s *podSandbox) withHelper() (helper.Isolation, bool) {
	if len(s.b.o.Helpers) == 0 || s.noHelper != "" {
		return helper.Isolation{}, false
	}
	return helper.Isolation{Run: s.runHelper, Baseline: s.baseline, Failed: s.tampered}, true
}

// Warnings implements sandbox.Warner: a sandbox without the helper says so.
func (s *podSandbox) Warnings() []string {
	switch {
	case len(s.b.o.Helpers) == 0:
		return []string{"verifier isolation through the image's bash and coreutils (no sandbox helper: " + s.b.o.HelperMissing + ")"}
	case s.noHelper != "":
		return []string{"verifier isolation through the image's bash and coreutils (the sandbox helper could not run in this image: " + s.noHelper + ")"}
	}
	return nil
}

// KillAll implements sandbox.Sandbox.
func (s *podSandbox) KillAll(ctx context.Context) error {
	if h, ok := s.withHelper(); ok {
		return h.KillAll(ctx)
	}
	return s.shell().KillAll(ctx)
}

// ReadFile implements sandbox.Sandbox.
func (s *podSandbox) ReadFile(ctx context.Context, path string, max int64, tail bool) ([]byte, error) {
	if h, ok := s.withHelper(); ok {
		return h.ReadFile(ctx, path, max, tail)
	}
	return s.shell().ReadFile(ctx, path, max, tail)
}

// ResetDir implements sandbox.Sandbox.
func (s *podSandbox) ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error {
	if h, ok := s.withHelper(); ok {
		return h.ResetDir(ctx, dir, mode, files)
	}
	return s.shell().ResetDir(ctx, dir, mode, files)
}

// NetAttempts implements sandbox.Sandbox: not observable here.
func (s *podSandbox) NetAttempts(ctx context.Context) (uint64, bool, error) {
	return s.shell().NetAttempts(ctx)
}

// helperBinary picks the helper for the pod's node: its
// kubernetes.io/arch label, else (the label cannot be read, e.g. no
// permission on nodes) this process's architecture.
func (s *podSandbox) helperBinary(ctx context.Context) (*helper.Binary, error) {
	if s.hbin != nil {
		return s.hbin, nil
	}
	arch := runtime.GOARCH
	pod, err := s.b.api.pods(s.b.ns).Get(ctx, s.name, metav1.GetOptions{})
	if err == nil && pod.Spec.NodeName != "" {
		if a, err := s.b.api.nodeArch(ctx, pod.Spec.NodeName); err == nil && a != "" {
			arch = a
		} else if err != nil {
			s.b.log.Debug("cannot read the node's architecture; assuming this process's", "pod", s.name, "arch", arch, "err", err)
		}
	}
	bin := s.b.o.Helpers[arch]
	if bin == nil {
		return nil, infra("engine_error", "pod %s: no sandbox helper for the node's architecture %s", s.name, arch)
	}
	s.hbin = bin
	return bin, nil
}

// runHelper is the helper.Runner of this backend (see above).
func (s *podSandbox) runHelper(ctx context.Context, args []string, input []byte, fresh bool) ([]byte, error) {
	if s.isStopped() {
		return nil, errStopped
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	out, err := s.runHelperBounded(ctx, args, input, fresh)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		// The call's own bound, not the caller's: a command in the pod
		// did not return (see Options.HelperTimeout).
		err = infra("engine_error", "pod %s: %w", s.name, &exitErr{what: "the sandbox helper", code: -1,
			stderr: fmt.Sprintf("no answer within %s", s.b.o.HelperTimeout)})
	}
	return out, err
}

// runHelperBounded writes the helper when needed and runs it, within
// Options.HelperTimeout; s.hmu is held.
func (s *podSandbox) runHelperBounded(ctx context.Context, args []string, input []byte, fresh bool) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.b.o.HelperTimeout)
	defer cancel()
	dir := s.hdir
	if fresh || dir == "" || s.dirty.Load() {
		bin, err := s.helperBinary(ctx)
		if err != nil {
			return nil, err
		}
		old := dir
		dir = helper.Dir()
		if _, err := s.run(ctx, "create the sandbox helper's directory", nil, "mkdir", "-m", "0700", dir); err != nil {
			return nil, err
		}
		if _, err := s.run(ctx, "write the sandbox helper", bytes.NewReader(bin.Data), "install", "-m", "0700", "/dev/stdin", dir+"/h"); err != nil {
			return nil, err
		}
		s.hdir = dir
		s.dirty.Store(false)
		if old != "" {
			args = append(args, "-rm", old)
		}
	}
	var stdin io.Reader
	if input != nil {
		args = append(args, "-in", "-")
		stdin = bytes.NewReader(input)
	}
	var out, errb bytes.Buffer
	if _, err := s.stream(ctx, append([]string{dir + "/h"}, args...), stdin, &out, &errb); err != nil {
		return nil, fmt.Errorf("run the sandbox helper: %w", err)
	}
	return out.Bytes(), nil
}

// tampered classifies a failure of the commands that put the helper in
// and run it, once they ran (an exit status, an answer without its frame;
// never a failure of the API or of the exec stream, which stay
// infrastructure failures). After they worked when the sandbox started
// (helperOK) and code of the agent may have run since (ran), the image's
// tools or the helper's copy were changed from inside: a
// *sandbox.TamperedError, which scores the attempt 0. Before that it is
// the image's: an infrastructure failure of this backend.
func (s *podSandbox) tampered(err error) error {
	var ee *exitErr
	noFrame := errors.Is(err, op.ErrNoFrame)
	if !noFrame && !errors.As(err, &ee) {
		return err // the API or the exec stream
	}
	if s.helperOK && s.ran.Load() {
		cause := err
		if ee != nil {
			cause = ee // not the infrastructure error around it
		}
		return &sandbox.TamperedError{Err: fmt.Errorf("pod %s: %w", s.name, cause)}
	}
	if noFrame {
		return infra("engine_error", "pod %s: %w", s.name, err)
	}
	return err
}
