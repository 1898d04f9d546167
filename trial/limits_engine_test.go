package trial_test

import (
	"context"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/trial"
)

const write2GB = "dd if=/dev/zero of=/app/big bs=1M count=2048 status=none"

// fillingActor is a policy that writes 2 GB into its sandbox.
type fillingActor struct{}

func (fillingActor) Name() string { return "filler" }
func (fillingActor) Act(ctx context.Context, sb sandbox.Sandbox, _ *trial.Task) (trial.ActReport, error) {
	_, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: write2GB, User: "root", Timeout: time.Minute})
	return trial.ActReport{}, err
}

// TestTaskLimitsOnEngine: limits of task.toml end a trial once, as the
// task's or the agent's outcome, never as a retried infrastructure failure.
func TestTaskLimitsOnEngine(t *testing.T) {
	// The real engine: the fake backend enforces no limit.
	d, runID := sandboxtest.Engine(t, "test-limits-")
	b := &countingBackend{Backend: d}
	passIfDone := "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"

	t.Run("storage", func(t *testing.T) {
		task := synthetic(t, "filler", "[environment]\nstorage_mb = 512\n", passIfDone, "#!/bin/bash\n"+write2GB+"\n")
		before := b.starts.Load()
		oracle := run(t, b, runID, task, trial.Oracle, 1)[0]
		if oracle.Outcome != trial.StorageExceeded || !oracle.TaskDefect() || oracle.Infra() {
			t.Errorf("oracle writing 2 GB into 512 MB: %s (%s), want %s", oracle.Outcome, oracle.Detail, trial.StorageExceeded)
		}
		// One session: the agent's sandbox and the verifier's, started
		// while the agent acts (and stopped unused), not a retried one.
		if n := b.starts.Load() - before; n != 2 {
			t.Errorf("%d sandbox starts, want 2 (one session, decided once, not retried)", n)
		}
		r := &trial.Runner{Backend: b}
		res, err := r.Run(context.Background(), task, trial.Options{Actor: fillingActor{}, Labels: map[string]string{sandbox.LabelRun: runID}})
		if err != nil {
			t.Fatal(err)
		}
		if p := res[0]; p.Outcome != trial.Scored || p.Reward == nil || *p.Reward != 0 || p.Infra() {
			t.Errorf("policy writing 2 GB into 512 MB: %s reward=%v (%s), want scored 0", p.Outcome, deref(p.Reward), p.Detail)
		}
	})

	t.Run("cpus above the host", func(t *testing.T) {
		task := synthetic(t, "greedy", "[environment]\ncpus = 1000\n", passIfDone, "#!/bin/bash\ntrue\n")
		before := b.starts.Load()
		res := run(t, b, runID, task, trial.Oracle, 1)
		wantReward(t, res, 1)
		if n := b.starts.Load() - before; n != 2 { // the agent's and the fresh verifier sandbox
			t.Errorf("%d sandbox starts, want 2", n)
		}
		if w := strings.Join(res[0].Warnings, "; "); !strings.Contains(w, "clamped") {
			t.Errorf("warnings %q, want the CPU clamp", w)
		}
	})

	t.Run("mknod", func(t *testing.T) {
		task := synthetic(t, "mknod", "",
			"#!/bin/bash\n[ -e /app/made ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
			"#!/bin/bash\nmknod /app/null c 1 3 && touch /app/made\n")
		wantReward(t, run(t, b, runID, task, trial.Oracle, 1), 0)
	})
}
