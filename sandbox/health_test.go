package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
)

// TestWaitHealthyIsBounded: a healthcheck that never passes, with huge
// periods and retries, ends at the run's bound as an unhealthy
// environment (a task defect), not after the task's hours, and not as an
// infrastructure failure.
func TestWaitHealthyIsBounded(t *testing.T) {
	hc := &bundle.Healthcheck{Command: "false", IntervalSec: 3600, StartPeriodSec: 86400, StartIntervalSec: 3600, Retries: 1000}
	exec := func(ctx context.Context, _ ExecRequest) (ExecResult, error) { return ExecResult{ExitCode: 1}, nil }
	pause := func(ctx context.Context, d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	exited := func(context.Context) error { return nil }
	start := time.Now()
	err := WaitHealthyWithin(context.Background(), 300*time.Millisecond, hc, exec, pause, exited)
	var he *HealthcheckError
	if !errors.As(err, &he) || IsInfra(err) {
		t.Fatalf("err %v, want a *HealthcheckError", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("waited %v past a 300 ms bound", d)
	}
	t.Log(err)
	// The caller's own cancellation stays a cancellation.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WaitHealthyWithin(ctx, time.Hour, hc, exec, pause, exited); errors.As(err, &he) {
		t.Fatalf("a cancelled wait is %v, want the context's error", err)
	}
}
