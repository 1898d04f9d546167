package trial_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
	"github.com/otcurate/otcurate/trial/trialtest"
)

const fixtures = "../testdata/harbor-examples"

// countingBackend counts sandbox starts.
type countingBackend struct {
	sandbox.Backend
	starts atomic.Int64
}

func (c *countingBackend) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	c.starts.Add(1)
	return c.Backend.Start(ctx, spec)
}

// engine connects to Docker under a fresh run id and, at the end, checks
// that the run left no container behind.
func engine(t *testing.T) (*countingBackend, string) {
	t.Helper()
	d, runID := sandboxtest.Backend(t, "test-trial-")
	return &countingBackend{Backend: d}, runID
}

func loadDir(t *testing.T, dir string) *trial.Task {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.EncodeDir(&buf, dir); err != nil {
		t.Fatal(err)
	}
	task, err := trial.LoadTask(filepath.Base(dir), buf.Bytes(), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// synthetic builds a task on the local bookworm image.
func synthetic(t *testing.T, name, toml, testSh, solveSh string, extra ...map[string]string) *trial.Task {
	t.Helper()
	files := map[string]string{
		"instruction.md":         "Do the thing.\n",
		"task.toml":              toml,
		"environment/Dockerfile": "FROM debian:bookworm\nWORKDIR /app\n",
		"tests/test.sh":          testSh,
	}
	if solveSh != "" {
		files["solution/solve.sh"] = solveSh
	}
	for _, m := range extra {
		for k, v := range m {
			files[k] = v
		}
	}
	return trialtest.Task(t, name, files)
}

func run(t *testing.T, b sandbox.Backend, runID string, task *trial.Task, agent trial.Agent, repeats int) []trial.Result {
	t.Helper()
	r := &trial.Runner{Backend: b}
	res, err := r.Run(context.Background(), task, trial.Options{Agent: agent, Repeats: repeats,
		Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != repeats {
		t.Fatalf("%d results for %d repeats", len(res), repeats)
	}
	for _, r := range res {
		t.Logf("%s %s: %s reward=%v detail=%q durations=%+v", r.Task, r.Agent, r.Outcome, deref(r.Reward), r.Detail, r.Durations)
	}
	return res
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func wantReward(t *testing.T, res []trial.Result, want float64) {
	t.Helper()
	for _, r := range res {
		if r.Outcome != trial.Scored || r.Reward == nil || *r.Reward != want {
			t.Errorf("%s/%s: %s reward=%v, want scored %v (%s)\n%s", r.Task, r.Agent, r.Outcome, deref(r.Reward), want, r.Detail, r.Log)
		}
	}
}

// TestHarborFixtures: the contract on five tasks nobody here wrote.
func TestHarborFixtures(t *testing.T) {
	sandboxtest.Parallel(t)
	b, runID := engine(t)
	// Subtests run in parallel: hello-world's offline apt-get alone takes
	// tens of seconds.
	t.Run("fixtures", func(t *testing.T) {
		for _, name := range []string{"hello-user", "hello-workdir", "hello-healthcheck"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				task := loadDir(t, filepath.Join(fixtures, name))
				wantReward(t, run(t, b, runID, task, trial.Oracle, 1), 1)
				wantReward(t, run(t, b, runID, task, trial.Nop, 1), 0)
			})
		}
		// Offline, these two cannot pass; they must say why, not score 0.
		t.Run("hello-alpine", func(t *testing.T) {
			t.Parallel()
			alpine := run(t, b, runID, loadDir(t, filepath.Join(fixtures, "hello-alpine")), trial.Nop, 1)
			if o := alpine[0].Outcome; o != trial.BuildNeedsNetwork && o != trial.BuildFailed {
				t.Errorf("hello-alpine: %s, want a build outcome", o)
			} else if o != trial.BuildNeedsNetwork {
				t.Errorf("hello-alpine: %s, want %s (apk cannot reach its repository)", o, trial.BuildNeedsNetwork)
			}
		})
		for _, agent := range []trial.Agent{trial.Oracle, trial.Nop} {
			t.Run("hello-world/"+string(agent), func(t *testing.T) {
				t.Parallel()
				world := run(t, b, runID, loadDir(t, filepath.Join(fixtures, "hello-world")), agent, 1)
				if world[0].Outcome != trial.VerifierNeedsNetwork || world[0].Reward != nil {
					t.Errorf("hello-world/%s: %s reward=%v, want %s and no reward", agent, world[0].Outcome, deref(world[0].Reward), trial.VerifierNeedsNetwork)
				}
			})
		}
	})
}

const quickToml = "[verifier]\ntimeout_sec = 20\n[agent]\ntimeout_sec = 20\n"

// TestRewardContract covers each way a verifier can fail to give a reward.
func TestRewardContract(t *testing.T) {
	sandboxtest.Parallel(t)
	b, runID := engine(t)
	cases := []struct {
		name, toml, test, solve string
		agent                   trial.Agent
		want                    trial.Outcome
	}{
		{"missing", quickToml, "#!/bin/bash\necho no reward\n", "", trial.Nop, trial.RewardMissing},
		{"garbage", quickToml, "#!/bin/bash\necho PASSED > /logs/verifier/reward.txt\n", "", trial.Nop, trial.RewardInvalid},
		{"nan", quickToml, "#!/bin/bash\necho nan > /logs/verifier/reward.txt\n", "", trial.Nop, trial.RewardInvalid},
		{"ambiguous", quickToml, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\necho '{\"reward\": 0}' > /logs/verifier/reward.json\n", "", trial.Nop, trial.RewardAmbiguous},
		{"json", quickToml, "#!/bin/bash\necho '{\"reward\": 1, \"passed\": 2}' > /logs/verifier/reward.json\n", "", trial.Nop, trial.Scored},
		{"exit code ignored", quickToml, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\nexit 3\n", "", trial.Nop, trial.Scored},
		{"verifier timeout", "[verifier]\ntimeout_sec = 2\n", "#!/bin/bash\nsleep 60\necho 1 > /logs/verifier/reward.txt\n", "", trial.Nop, trial.VerifierTimeout},
		{"solve timeout", "[agent]\ntimeout_sec = 2\n[verifier]\ntimeout_sec = 20\n", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "#!/bin/bash\nsleep 60\n", trial.Oracle, trial.SolveTimeout},
		{"no solution", quickToml, "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "", trial.Oracle, trial.NoSolution},
		// A process left running by solve.sh must not hang the verifier.
		{"background process", quickToml, "#!/bin/bash\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
			"#!/bin/bash\nsleep 1000 &\ntouch /app/done\n", trial.Oracle, trial.Scored},
		// The agent cannot leave a reward behind: /logs/verifier is cleared.
		{"prewritten reward", quickToml, "#!/bin/bash\ntrue\n", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", trial.Oracle, trial.RewardMissing},
		// 200 MB of verifier output stays in the sandbox's log file.
		{"huge output", quickToml, "#!/bin/bash\nhead -c 200000000 /dev/zero | tr '\\0' x\necho\necho 1 > /logs/verifier/reward.txt\n", "", trial.Nop, trial.Scored},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res := run(t, b, runID, synthetic(t, tc.name, tc.toml, tc.test, tc.solve), tc.agent, 1)
			if res[0].Outcome != tc.want {
				t.Fatalf("outcome %s (%s), want %s\n%s", res[0].Outcome, res[0].Detail, tc.want, res[0].Log)
			}
			if len(res[0].Log) > 16<<10 {
				t.Errorf("kept %d bytes of log", len(res[0].Log))
			}
			t.Logf("%s in %v", tc.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestRepeatsShareOneSandbox: N verifier runs on one post-solution state
// cost one agent sandbox and one verifier sandbox (the fresh default);
// --isolate costs N of each.
func TestRepeatsShareOneSandbox(t *testing.T) {
	sandboxtest.Parallel(t)
	b, runID := engine(t)
	task := synthetic(t, "repeats", quickToml, "#!/bin/bash\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt\n", "#!/bin/bash\ntouch /app/done\n")
	res := run(t, b, runID, task, trial.Oracle, 5)
	wantReward(t, res, 1)
	if n := b.starts.Load(); n != 2 {
		t.Fatalf("5 repeats started %d sandboxes, want 2 (the agent's, the verifier's)", n)
	}
	r := &trial.Runner{Backend: b}
	if _, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, Repeats: 3, Isolate: true,
		Labels: map[string]string{sandbox.LabelRun: runID}}); err != nil {
		t.Fatal(err)
	}
	if n := b.starts.Load(); n != 8 {
		t.Fatalf("3 isolated repeats started %d sandboxes, want 6", n-2)
	}
}

// TestCancelLeavesNoContainer: cancelling mid-solve returns promptly and
// leaves nothing (checked by engine's cleanup).
func TestCancelLeavesNoContainer(t *testing.T) {
	sandboxtest.Parallel(t)
	b, runID := engine(t)
	task := synthetic(t, "cancel", "[agent]\ntimeout_sec = 120\n", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "#!/bin/bash\nsleep 100\n")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(4 * time.Second)
		cancel()
	}()
	start := time.Now()
	r := &trial.Runner{Backend: b}
	_, err := r.Run(ctx, task, trial.Options{Agent: trial.Oracle, Labels: map[string]string{sandbox.LabelRun: runID}})
	if err == nil {
		t.Fatal("run finished although cancelled")
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

// lateActor does the task's work and then reports that it ran out of
// time, as the agent harness does when its episode deadline passes. It
// calls itself "oracle": a name must not make it the reference solution.
type lateActor struct{}

func (lateActor) Name() string { return string(trial.Oracle) }

func (lateActor) Act(ctx context.Context, sb sandbox.Sandbox, _ *trial.Task) (trial.ActReport, error) {
	if _, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "touch /app/done", User: "root", Timeout: time.Minute}); err != nil {
		return trial.ActReport{}, err
	}
	return trial.ActReport{TimedOut: true}, nil
}

// TestAgentTimeoutByKind: the same work followed by a timeout is a task
// defect when the reference solution times out (solve_timeout) and a
// scored, passed attempt when a policy agent does.
func TestAgentTimeoutByKind(t *testing.T) {
	sandboxtest.Parallel(t)
	b, runID := engine(t)
	task := synthetic(t, "late", "[agent]\ntimeout_sec = 2\n[verifier]\ntimeout_sec = 20\n",
		"#!/bin/bash\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
		"#!/bin/bash\ntouch /app/done\nsleep 60\n")
	oracle := run(t, b, runID, task, trial.Oracle, 1)[0]
	if oracle.Outcome != trial.SolveTimeout || !oracle.TaskDefect() || oracle.Scored() || oracle.Passed() {
		t.Errorf("oracle past its timeout: %s (defect %t, scored %t), want %s, a task defect", oracle.Outcome, oracle.TaskDefect(), oracle.Scored(), trial.SolveTimeout)
	}
	r := &trial.Runner{Backend: b}
	res, err := r.Run(context.Background(), task, trial.Options{Actor: lateActor{}, Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		t.Fatal(err)
	}
	p := res[0]
	if p.Outcome != trial.Scored || !p.Scored() || !p.Passed() || p.TaskDefect() || p.Infra() {
		t.Errorf("policy past its timeout: %s reward=%v (%s), want scored and passed", p.Outcome, deref(p.Reward), p.Detail)
	}
	if len(p.Warnings) == 0 || !strings.Contains(p.Warnings[len(p.Warnings)-1], "timeout") {
		t.Errorf("policy past its timeout: warnings %q, want the timeout noted", p.Warnings)
	}
}
