// Command otcurate curates RL task pools: it validates, deduplicates and
// lints Harbor tasks, runs them in sandboxes to filter out broken and
// flaky ones, explains every drop, and writes the reference parquet format
// (build, filter, validate, merge). It also handles datasets (pack,
// unpack, inspect, report), generates labelled test pools (gen-pool), runs
// a task with an agent (run), exports SFT traces (traces), trains a policy
// with RLOO (train), and cleans up sandboxes (sandbox gc). This package is
// the CLI: flags, wiring and help; the work is done by the packages it
// calls.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes (documented in the root command's help).
const (
	exitOK          = 0
	exitFatal       = 1
	exitUsage       = 2
	exitItemFailure = 3
	exitInterrupted = 130
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	root := newRootCmd()
	err := root.ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err, root.ErrOrStderr()))
}

// exitError carries an exit code other than 1 through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error, stderr interface{ Write([]byte) (int, error) }) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitItemFailure {
		fmt.Fprintln(stderr, "otcurate:", err)
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "otcurate: interrupted")
		return exitInterrupted
	}
	fmt.Fprintln(stderr, "otcurate:", err)
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFatal
}
