package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox"
)

// testBuild: a new environment builds, the second Build of it is cached
// (same image); a failing RUN is a *sandbox.BuildError carrying the log,
// and a build slower than its BuildTimeout is a timed-out BuildError,
// returned soon after the timeout.
func (s *suite) testBuild(t *testing.T) {
	t.Run("cached", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		env := s.env("FROM " + s.h.BaseImage + "\nRUN echo " + marker(1) + " > /marker\n")
		first, err := s.b.Build(ctx, env)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if first.Cached || first.Ref == "" {
			t.Errorf("first Build = %+v, want a fresh image", first)
		}
		again, err := s.b.Build(ctx, env)
		if err != nil || !again.Cached || again.Ref != first.Ref {
			t.Errorf("second Build = %+v, %v; want the cached %s", again, err, first.Ref)
		}
		sb := start(t, s.b, sandbox.StartSpec{Image: again})
		if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "cat /marker"}); !strings.HasPrefix(out, "1.") {
			t.Errorf("/marker of the built image = %q", out)
		}
	})
	t.Run("failing RUN", func(t *testing.T) {
		t.Parallel()
		m := "boom-" + marker(2)
		_, err := s.b.Build(context.Background(), s.env("FROM "+s.h.BaseImage+"\nRUN echo "+m+" && exit 3\n"))
		var be *sandbox.BuildError
		if !errors.As(err, &be) {
			t.Fatalf("err = %v, want a *sandbox.BuildError", err)
		}
		if be.Timeout || sandbox.IsInfra(err) || !strings.Contains(be.Log, m) {
			t.Errorf("BuildError = %+v, want no timeout and the log naming %s", be, m)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		env := s.env("FROM " + s.h.BaseImage + "\nRUN sleep " + marker(37) + "\n")
		env.BuildTimeout = 3 * time.Second
		t0 := time.Now()
		_, err := s.b.Build(context.Background(), env)
		took := time.Since(t0)
		var be *sandbox.BuildError
		if !errors.As(err, &be) || !be.Timeout {
			t.Fatalf("err = %v, want a *sandbox.BuildError with Timeout", err)
		}
		if took > 20*time.Second {
			t.Errorf("a build with a 3 s timeout returned after %s", took)
		}
	})
}
