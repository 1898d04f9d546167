package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/otcurate/otcurate/bundle"
)

// WaitHealthy runs a task's [environment.healthcheck] command (as root)
// until it passes, with Docker's HEALTHCHECK semantics: during
// start_period_sec failures do not count and checks come every
// start_interval_sec; after it, retries failures in a row at interval_sec
// make a *HealthcheckError. pause waits and fails early when the sandbox's
// main process exits; exited returns the *HealthcheckError of a sandbox
// that is no longer running (nil while it runs). Every backend shares it,
// so a healthcheck means the same on all of them.
//
// The whole wait is bounded by MaxHealthWait, whatever the task's periods
// and retries say (issue 29: a healthcheck that never passes, with huge
// periods, held a worker for hours): past it the sandbox is unhealthy, a
// *HealthcheckError naming the bound, never an infrastructure failure.
func WaitHealthy(ctx context.Context, hc *bundle.Healthcheck,
	exec func(context.Context, ExecRequest) (ExecResult, error),
	pause func(context.Context, time.Duration) error,
	exited func(context.Context) error) error {
	return WaitHealthyWithin(ctx, MaxHealthWait, hc, exec, pause, exited)
}

// WaitHealthyWithin is WaitHealthy bounded by limit instead of
// MaxHealthWait.
func WaitHealthyWithin(ctx context.Context, limit time.Duration, hc *bundle.Healthcheck,
	exec func(context.Context, ExecRequest) (ExecResult, error),
	pause func(context.Context, time.Duration) error,
	exited func(context.Context) error) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	overdue := func(attempts int) error {
		if parent.Err() == nil && ctx.Err() != nil {
			return &HealthcheckError{Command: hc.Command, Attempts: attempts, TimedOut: true,
				Err: fmt.Errorf("the healthcheck did not pass within the run's bound of %s on health waiting", limit)}
		}
		return nil
	}
	interval := seconds(hc.IntervalSec, 5*time.Second)
	timeout := seconds(hc.TimeoutSec, 30*time.Second)
	startInterval := seconds(hc.StartIntervalSec, 5*time.Second)
	startPeriod := seconds(hc.StartPeriodSec, 0)
	retries := max(int(hc.Retries), 1)

	startDeadline := time.Now().Add(startPeriod)
	if startPeriod > 0 {
		if err := pause(ctx, min(startInterval, startPeriod)); err != nil {
			if e := overdue(0); e != nil {
				return e
			}
			return err
		}
	}
	failures := 0
	for attempt := 1; ; attempt++ {
		res, err := exec(ctx, ExecRequest{Cmd: hc.Command, User: "root", Timeout: timeout, MaxOutput: 8 << 10})
		if err != nil {
			if e := overdue(attempt); e != nil {
				return e
			}
			if e := exited(parent); e != nil {
				return e
			}
			return err
		}
		if res.ExitCode == 0 && !res.TimedOut {
			return nil
		}
		var delay time.Duration
		if now := time.Now(); now.Before(startDeadline) {
			delay = min(startInterval, startDeadline.Sub(now))
		} else {
			failures++
			if failures >= retries {
				if e := exited(ctx); e != nil {
					return e
				}
				return &HealthcheckError{Command: hc.Command, Attempts: attempt, ExitCode: res.ExitCode,
					TimedOut: res.TimedOut, Output: string(res.Stdout) + string(res.Stderr)}
			}
			delay = interval
		}
		if err := pause(ctx, delay); err != nil {
			if e := overdue(attempt); e != nil {
				return e
			}
			return err
		}
	}
}

// MaxHealthWait bounds a whole healthcheck wait (WaitHealthy).
const MaxHealthWait = 5 * time.Minute

// seconds converts a task.toml duration, using def when it is unset.
func seconds(v float64, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return time.Duration(v * float64(time.Second))
}
