package trial_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// tamperBackend starts sandboxes whose KillAll fails with a
// *sandbox.TamperedError once anything was exec'd in them: what the
// Kubernetes backend reports when the agent broke the image's mkdir or
// install that put the sandbox helper in.
type tamperBackend struct{ sandbox.Backend }

func (b tamperBackend) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	sb, err := b.Backend.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &tamperedSandbox{Sandbox: sb}, nil
}

type tamperedSandbox struct {
	sandbox.Sandbox
	ran atomic.Bool
}

func (s *tamperedSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	s.ran.Store(true)
	return s.Sandbox.Exec(ctx, req)
}

func (s *tamperedSandbox) KillAll(ctx context.Context) error {
	if s.ran.Load() {
		return &sandbox.TamperedError{Err: errors.New("write the sandbox helper: exit 1")}
	}
	return s.Sandbox.KillAll(ctx)
}

// TestTamperedSandboxScoresZero: a sandbox whose own tools the agent broke
// is the agent's doing: every repeat is scored 0 (never an infrastructure
// outcome, which would leave the attempt out of the scores), in the
// agent's sandbox and when the verifier gets a sandbox of its own, and
// the agent's trajectory is kept.
func TestTamperedSandboxScoresZero(t *testing.T) {
	sandboxtest.Parallel(t)
	d, runID := sandboxtest.Backend(t, "test-trial-tamper-")
	task := synthetic(t, "tamper", quickToml, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "#!/bin/bash\ntrue\n")
	for _, mode := range []trial.VerifierSandbox{trial.VerifierShared, trial.VerifierSeparate} {
		t.Run(string(mode), func(t *testing.T) {
			r := &trial.Runner{Backend: tamperBackend{d}}
			res, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, Repeats: 2, VerifierSandbox: mode,
				Labels: map[string]string{sandbox.LabelRun: runID}})
			if err != nil {
				t.Fatalf("run: %v (infrastructure %v), want results scored 0", err, sandbox.IsInfra(err))
			}
			if len(res) != 2 {
				t.Fatalf("%d results for 2 repeats", len(res))
			}
			wantReward(t, res, 0)
			for _, r := range res {
				if !strings.Contains(r.Detail, "misbehaved after the agent ran") {
					t.Errorf("detail %q does not say why it scored 0", r.Detail)
				}
			}
		})
	}
}
