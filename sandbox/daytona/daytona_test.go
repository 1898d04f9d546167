package daytona_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/conformance"
	"github.com/otcurate/otcurate/sandbox/daytona"
	"github.com/otcurate/otcurate/sandbox/daytona/daytonatest"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
	"github.com/otcurate/otcurate/trial/trialtest"
)

func taskOf(t *testing.T, name, dockerfile, test, solve string) *trial.Task {
	return trialtest.DoneTask(t, name, "[verifier]\ntimeout_sec = 60\n", dockerfile, test, solve)
}

const (
	goodDocker = "FROM debian:bookworm\nWORKDIR /app\n"
	goodTest   = "#!/bin/bash\n[ \"$(cat /app/done 2>/dev/null)\" = \"$(cat /tests/expected.txt)\" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	goodSolve  = "#!/bin/bash\necho done > /app/done\n"
)

// TestDaytonaVerifierContract runs the Harbor verifier contract through the
// daytona backend against a server that speaks the Daytona API on the real
// engine: the oracle scores 1 (twice, one snapshot), nop 0, a Dockerfile
// that fails is a build defect, and a rate limit plus a CPU-quota error on
// sandbox creation are waited out, not blamed on the task.
func TestDaytonaVerifierContract(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	engine, _ := sandboxtest.Engine(t, "test-daytona-")
	srv := daytonatest.New(engine, daytonatest.RateLimited, daytonatest.CPUQuota)
	defer srv.Close()
	ctx := context.Background()
	runID := fmt.Sprintf("daytona-%d", time.Now().UnixNano())
	if _, err := daytona.New(ctx, daytona.Options{APIURL: srv.APIURL(), APIKey: "wrong", RunID: runID}); err == nil {
		t.Fatal("a wrong API key was accepted")
	}
	b, err := daytona.New(ctx, daytona.Options{APIURL: srv.APIURL(), APIKey: daytonatest.APIKey, RunID: runID, Backoff: 200 * time.Millisecond,
		Helper: helperBin})
	if err != nil {
		t.Fatal(err)
	}
	runner := &trial.Runner{Backend: b, VerifierSandbox: trial.VerifierShared} // the fresh default needs a backend that lists changes
	labels := map[string]string{sandbox.LabelRun: runID}

	good := taskOf(t, "good", goodDocker, goodTest, goodSolve)
	res, err := runner.Run(ctx, good, trial.Options{Agent: trial.Oracle, Repeats: 2, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != trial.Scored || *r.Reward != 1 {
			t.Errorf("oracle: %s %v (%s; log %q)", r.Outcome, r.Reward, r.Detail, r.Log)
		}
	}
	if srv.Rejected != 2 {
		t.Errorf("the server rejected %d creations, want the 2 injected faults", srv.Rejected)
	}
	res, err = runner.Run(ctx, good, trial.Options{Agent: trial.Nop, Repeats: 1, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Outcome != trial.Scored || *r.Reward != 0 || !r.ImageCached {
		t.Errorf("nop: %s %v cached=%v (%s)", r.Outcome, r.Reward, r.ImageCached, r.Detail)
	}
	bad := taskOf(t, "bad", goodDocker+"RUN exit 3\n", goodTest, goodSolve)
	res, err = runner.Run(ctx, bad, trial.Options{Agent: trial.Oracle, Repeats: 1, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Outcome != trial.BuildFailed {
		t.Errorf("failing Dockerfile: %s (%s), want %s", r.Outcome, r.Detail, trial.BuildFailed)
	}

	// Environment variables, the user, a missing file, and a timeout.
	img, err := b.Build(ctx, sandbox.Environment{Hash: good.Bundle.EnvHash, Files: trialtest.EnvFiles(t, good)})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img, Workdir: "/app", Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: `echo "$GREETING from $(pwd) as $(id -un)"`, Env: map[string]string{"GREETING": "it's a \"quoted\" value"}, User: "nobody"})
	if err != nil || string(r.Stdout) != "it's a \"quoted\" value from /app as nobody\n" || r.ExitCode != 0 {
		t.Errorf("exec: %q exit %d, %v", r.Stdout, r.ExitCode, err)
	}
	if _, err := sb.Download(ctx, "/nonexistent", 10); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("download of a missing file: %v", err)
	}
	if r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "sleep 30", Timeout: time.Second}); err != nil || !r.TimedOut {
		t.Errorf("timeout: %+v, %v", r, err)
	}
	// The agent harness's shell on a Daytona terminal (tmux in the
	// sandbox): state persists between commands, a heredoc, Ctrl-C of a
	// running command, the user and the workdir.
	sh, err := agent.OpenShell(ctx, sb, "nobody", "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Wait(ctx, 1, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	sh.Take()
	steps := []struct {
		keys string
		want string
	}{
		{"X=$((6*7)); echo \"$X at $(pwd) as $(id -un)\"\n", "42 at /tmp as nobody"},
		{"cat > /tmp/h.txt <<'EOF'\nline $X\nEOF\ncat /tmp/h.txt\n", "line $X"},
		{"sleep 100\n", ""},
		{"\x03", ""},
		{"echo after-ctrl-c $X\n", "after-ctrl-c 42"},
	}
	for _, st := range steps {
		max := 20 * time.Second
		if st.keys == "sleep 100\n" {
			max = 2 * time.Second
		}
		if err := sh.Send(ctx, []byte(st.keys), max); err != nil {
			t.Fatalf("send %q: %v", st.keys, err)
		}
		if out := sh.Take(); st.want != "" && !strings.Contains(out, st.want) {
			t.Errorf("after %q the screen is %q, want %q", st.keys, out, st.want)
		}
	}
	sh.Close()
	// A sandbox left behind is found by label and removed by the janitor.
	rep, err := b.GC(ctx, sandbox.GCOptions{Run: runID})
	if err != nil || len(rep.Containers) != 1 {
		t.Errorf("gc removed %v (%v), want the one sandbox left", rep.Containers, err)
	}
	if rep, _ := b.GC(ctx, sandbox.GCOptions{Run: runID}); len(rep.Containers) != 0 {
		t.Errorf("second gc removed %v", rep.Containers)
	}
}

// TestDaytonaConformance holds the daytona backend, on the test server, to
// the sandbox contract (package conformance). The toolbox returns one
// output stream, so stderr is expected inside stdout, and answers a
// timeout without the output printed before it.
func TestDaytonaConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	engine, engineRun := sandboxtest.Engine(t, "test-daytona-conf-")
	t.Cleanup(func() { engine.GC(context.Background(), sandbox.GCOptions{Run: engineRun, Images: true}) })
	srv := daytonatest.New(engine)
	t.Cleanup(srv.Close)
	conformance.Run(t, conformance.Harness{
		Backend: func(t *testing.T) (sandbox.Backend, string) {
			runID := fmt.Sprintf("daytona-conf-%d", time.Now().UnixNano())
			b, err := daytona.New(context.Background(), daytona.Options{APIURL: srv.APIURL(), APIKey: daytonatest.APIKey,
				RunID: runID, Backoff: 100 * time.Millisecond, Helper: helperBin})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				rep, err := b.GC(context.Background(), sandbox.GCOptions{Run: runID})
				if err != nil || len(rep.Containers) > 0 {
					t.Errorf("run %s left sandboxes %v (%v)", runID, rep.Containers, err)
				}
			})
			return b, runID
		},
		BaseImage:          "debian:bookworm",
		CombinedOutput:     true,
		TimeoutLosesOutput: true,
		HostProcesses:      true,
	})
}
