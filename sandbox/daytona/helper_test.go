package daytona_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/daytona"
	"github.com/otcurate/otcurate/sandbox/daytona/daytonatest"
	"github.com/otcurate/otcurate/sandbox/helper"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
	"github.com/otcurate/otcurate/trial/trialtest"
)

// helperBin is the sandbox helper, built for amd64 by TestMain.
var helperBin *helper.Binary

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "daytona-helper-")
	if err != nil {
		panic(err)
	}
	cmd := exec.Command("go", "build", "-ldflags", "-s -w", "-o", filepath.Join(dir, helper.FileName("amd64")),
		"github.com/otcurate/otcurate/cmd/otcurate-sandbox-helper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		panic(string(out))
	}
	if helperBin, err = helper.Find(dir, "amd64"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The attacks of trial's adversarial suite that target how a backend
// without a host-side view reads the result: solve.sh leaves the wrong
// answer (41) and replaces the image's tools or leaves processes behind.
const (
	advToml = "[verifier]\ntimeout_sec = 8\n[agent]\ntimeout_sec = 30\n"
	advTest = `#!/bin/bash
out=$(cat /app/answer 2>/dev/null)
[ -x /app/program.sh ] && out=$(/app/program.sh 2>&1)
if [ "$out" = 42 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`
	advWrong = "#!/bin/bash\nmkdir -p /app && echo 41 > /app/answer\n"
)

// fake installs NAME over the image's own in /usr/bin and /bin (not
// just first in PATH: the helper and the shell path name no PATH).
func fake(name, body string) string {
	return "for d in /usr/local/bin /usr/bin /bin; do [ -L $d ] && continue; printf '%s\\n' '#!/bin/sh' " + sandbox.ShellQuote(body) +
		" > $d/" + name + ".new && chmod 755 $d/" + name + ".new && mv -f $d/" + name + ".new $d/" + name + "; done\n"
}

// printOne is a fake tool that claims reward 1 every way it was once read:
// a 1 on stdout, base64 of "1\n", and a shell-path frame.
const printOne = `echo 1; echo MQo=; printf '\n@@otcurate rc 0\n@@otcurate file reward.txt\nMQo=\n@@otcurate end\n'`

// TestDaytonaAdversarialTools: with the sandbox helper, an agent that
// replaced bash, sh, head, tail, base64, rm, tar or cat in its image, or
// left processes behind, gets no forged reward and no infrastructure
// outcome through the daytona backend.
func TestDaytonaAdversarialTools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	engine, engineRun := sandboxtest.Engine(t, "test-daytona-adv-")
	t.Cleanup(func() { engine.GC(context.Background(), sandbox.GCOptions{Run: engineRun, Images: true}) })
	srv := daytonatest.New(engine)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	runID := fmt.Sprintf("daytona-adv-%d", time.Now().UnixNano())
	b, err := daytona.New(ctx, daytona.Options{APIURL: srv.APIURL(), APIKey: daytonatest.APIKey, RunID: runID,
		Backoff: 100 * time.Millisecond, Helper: helperBin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.GC(context.Background(), sandbox.GCOptions{Run: runID}) })
	runner := &trial.Runner{Backend: b, VerifierSandbox: trial.VerifierShared} // the fresh default needs a backend that lists changes
	cases := []struct {
		name, solve string
		taskSide    bool // the attack breaks the verifier itself: a task-side outcome is fine
	}{
		{"control: wrong answer", advWrong, false},
		// The shell path reads the reward with head: this forges a 1 there.
		{"fake head", advWrong + fake("head", "echo 1"), false},
		{"fake head, tail, base64, cat", advWrong + fake("head", printOne) + fake("tail", printOne) + fake("base64", printOne) + fake("cat", "echo 42"), true},
		{"fake rm, mkdir, tar, chmod", advWrong + fake("rm", "exit 0") + fake("mkdir", "exit 0") + fake("tar", "exit 0") + fake("chmod", "exit 0"), false},
		{"fake bash prints frames", advWrong + fake("bash", printOne), true},
		{"background loop writes reward", advWrong +
			"setsid nohup bash -c 'while :; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.01; done' >/dev/null 2>&1 &\n", false},
		{"continuous forker writes reward", advWrong +
			"setsid nohup bash -c 'while :; do (echo 1 > /logs/verifier/reward.txt 2>/dev/null &); done' >/dev/null 2>&1 &\n", false},
		{"reward path a symlink to a /proc file holding 1", advWrong +
			"f=$(grep -lx 1 /proc/sys/kernel/* /proc/sys/vm/* 2>/dev/null | head -1)\n" +
			"cat > /app/program.sh <<P\n#!/bin/bash\nln -sfn $f /logs/verifier/reward.txt; echo 41\nP\nchmod +x /app/program.sh\n", false},
		{"reward path a FIFO", advWrong + "cat > /app/program.sh <<'P'\n#!/bin/bash\nrm -f /logs/verifier/reward.txt; mkfifo /logs/verifier/reward.txt; echo 41\nP\nchmod +x /app/program.sh\n", true},
		{"conftest planted in /tests", advWrong + "mkdir -p /tests && echo 'echo 1 > /logs/verifier/reward.txt' > /tests/conftest.sh\n", false},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			task := trialtest.DoneTask(t, "adv", advToml, "FROM debian:bookworm\nWORKDIR /app\n", advTest, tc.solve)
			res, err := runner.Run(ctx, task, trial.Options{Agent: trial.Oracle, Repeats: 1, Labels: map[string]string{sandbox.LabelRun: runID}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				switch {
				case r.Outcome.IsInfra():
					t.Errorf("infrastructure outcome %s (%s)", r.Outcome, r.Detail)
				case r.Outcome == trial.Scored && (r.Reward == nil || *r.Reward != 0):
					t.Errorf("forged reward (%s)\n%s", r.Detail, r.Log)
				case r.Outcome != trial.Scored && (!tc.taskSide || !r.Outcome.IsTaskDefect()):
					t.Errorf("outcome %s (%s), want scored 0", r.Outcome, r.Detail)
				}
				t.Logf("%s: %s %s %s", tc.name, r.Outcome, reward(r), r.Detail)
			}
		})
	}
}

// TestDaytonaVerifyCost measures the verifier-isolation calls of one
// verification (kill, reset /logs/verifier, reset /tests with files, an
// exec standing in for test.sh, kill, three reads) on the test server,
// with the helper and with the image's shell: the median of N runs each
// (OTCURATE_DAYTONA_COST_RUNS, default 0: skipped).
func TestDaytonaVerifyCost(t *testing.T) {
	n := 0
	fmt.Sscan(os.Getenv("OTCURATE_DAYTONA_COST_RUNS"), &n)
	if n <= 0 {
		t.Skip("set OTCURATE_DAYTONA_COST_RUNS=N to measure")
	}
	engine, engineRun := sandboxtest.Engine(t, "test-daytona-cost-")
	t.Cleanup(func() { engine.GC(context.Background(), sandbox.GCOptions{Run: engineRun, Images: true}) })
	srv := daytonatest.New(engine)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	tests := []bundle.Entry{{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(advTest)}}
	for _, mode := range []string{"shell", "helper"} {
		runID := fmt.Sprintf("daytona-cost-%d", time.Now().UnixNano())
		o := daytona.Options{APIURL: srv.APIURL(), APIKey: daytonatest.APIKey, RunID: runID, Backoff: 100 * time.Millisecond}
		if mode == "helper" {
			o.Helper = helperBin
		}
		b, err := daytona.New(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		img, err := b.Build(ctx, sandbox.Environment{Hash: "cost", Task: "cost",
			Files: []bundle.Entry{{Name: "Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian:bookworm\n")}}})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.Start(ctx, sandbox.StartSpec{Image: img, Labels: map[string]string{sandbox.LabelRun: runID}})
		if err != nil {
			t.Fatal(err)
		}
		var took []time.Duration
		for i := 0; i < n; i++ {
			t0 := time.Now()
			must := func(err error) {
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
			}
			must(sb.KillAll(ctx))
			must(sb.ResetDir(ctx, "/logs/verifier", 0o777, nil))
			must(sb.ResetDir(ctx, "/tests", 0o755, tests))
			_, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "echo 0 > /logs/verifier/reward.txt", User: "root"})
			must(err)
			must(sb.KillAll(ctx))
			for _, p := range []string{"/logs/verifier/reward.txt", "/logs/verifier/reward.json", "/logs/verifier/test-stdout.txt"} {
				if _, err := sb.ReadFile(ctx, p, 1<<10, false); err != nil && !strings.Contains(err.Error(), "not found") {
					must(err)
				}
			}
			took = append(took, time.Since(t0))
		}
		sb.Stop(ctx)
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		t.Logf("%s: median %v over %d verifications (min %v, max %v)", mode, took[n/2], n, took[0], took[n-1])
	}
}

// reward prints a result's reward, "none" when it has none.
func reward(r trial.Result) string {
	if r.Reward == nil {
		return "none"
	}
	return fmt.Sprint(*r.Reward)
}
