package filters_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// turnPolicy answers turn n of the session with reply(session, n, the
// last user message): a scripted policy that can differ per attempt and
// read the terminal.
type turnPolicy struct {
	reply func(session string, n int, last string) (string, error)
}

func (p turnPolicy) Name() string { return "scripted" }

func (p turnPolicy) Complete(ctx context.Context, req policy.Request) (policy.Completion, error) {
	n := 0
	for _, m := range req.Messages {
		if m.Role == policy.RoleAssistant {
			n++
		}
	}
	c, err := p.reply(req.SessionID, n, req.Messages[len(req.Messages)-1].Content)
	return policy.Completion{Content: c, Model: "scripted"}, err
}

// terminusReply renders a terminus-2 reply typing cmds.
func terminusReply(complete bool, cmds ...string) string {
	type command struct {
		Keystrokes string  `json:"keystrokes"`
		Duration   float64 `json:"duration"`
	}
	cs := []command{}
	for _, c := range cmds {
		cs = append(cs, command{c, 2})
	}
	b, _ := json.Marshal(map[string]any{"analysis": "a", "plan": "p", "commands": cs, "task_complete": complete})
	return string(b)
}

// writes is a policy whose attempt i types write(i) and completes.
func writes(write func(attempt string) string) turnPolicy {
	return turnPolicy{reply: func(session string, n int, _ string) (string, error) {
		if n == 0 {
			return terminusReply(true, write(session[strings.LastIndexByte(session, '#')+1:])), nil
		}
		return terminusReply(true), nil
	}}
}

// proverItem packs a solution-less task whose verifier is testSh and
// returns it as a pipeline item (with its blob and hash) and a trial task.
func proverItem(t *testing.T, name, testSh string) (*pipeline.Item, *trial.Task) {
	t.Helper()
	files := map[string]string{
		"instruction.md":         "Write ok to /app/out.txt.\n",
		"task.toml":              "version = \"1.0\"\n[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n",
		"environment/Dockerfile": "FROM debian:bookworm\nWORKDIR /app\n",
		"tests/test.sh":          testSh,
	}
	var entries []bundle.Entry
	for p, data := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		entries = append(entries, bundle.Entry{Name: p, Kind: bundle.KindFile, Mode: mode, Data: []byte(data)})
	}
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	tk, err := trial.LoadTask(name, buf.Bytes(), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	it := &pipeline.Item{Task: &pipeline.Task{Path: name, Hash: tk.Bundle.ContentHash}, Record: pool.Record{Path: name, Blob: buf.Bytes()},
		Bundle: tk.Bundle, Info: tk.Info}
	return it, tk
}

const okVerifier = "#!/bin/bash\nif [ \"$(cat /app/out.txt 2>/dev/null)\" = ok ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"

// countingStarts counts sandbox starts.
type countingStarts struct {
	sandbox.Backend
	n atomic.Int64
}

func (c *countingStarts) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	c.n.Add(1)
	return c.Backend.Start(ctx, spec)
}

func TestPolicyProver(t *testing.T) {
	sandboxtest.Parallel(t)
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-prover-")
	labels := map[string]string{sandbox.LabelRun: runID}
	tokenVerifier := "#!/bin/bash\nif [ -s /tmp/tok ] && [ \"$(cat /app/out.txt 2>/dev/null)\" = \"$(cat /tmp/tok)\" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
	flipVerifier := "#!/bin/bash\nn=$(( $(cat /app/.n 2>/dev/null || echo 0) + 1 )); echo $n > /app/.n\n" +
		"if [ \"$(cat /app/out.txt 2>/dev/null)\" = ok ] && [ $n = 1 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
	hex := regexp.MustCompile(`\b[0-9a-f]{16}\b`)
	// The token policy makes a random token in the sandbox, reads it off
	// the terminal and types it back: its replay types the old token.
	tokenPolicy := turnPolicy{reply: func(_ string, n int, last string) (string, error) {
		switch n {
		case 0:
			return terminusReply(false, "head -c8 /dev/urandom | od -An -tx1 | tr -d ' \\n' > /tmp/tok; echo; cat /tmp/tok; echo\n"), nil
		case 1:
			return terminusReply(true, "echo "+hex.FindString(last)+" > /app/out.txt\n"), nil
		}
		return terminusReply(true), nil
	}}
	// typesIntoCat writes the file by typing its content into cat and
	// ending it with C-d: the terminal does it, a script cannot.
	typesIntoCat := turnPolicy{reply: func(_ string, n int, _ string) (string, error) {
		if n == 0 {
			return terminusReply(true, "cat > /app/out.txt\n", "ok\n", "C-d"), nil
		}
		return terminusReply(true), nil
	}}
	down := turnPolicy{reply: func(string, int, string) (string, error) {
		return "", &policy.Unavailable{Attempts: 1, Err: os.ErrDeadlineExceeded}
	}}
	for _, tc := range []struct {
		name     string
		testSh   string
		pol      policy.Policy
		solved   bool
		verdict  pipeline.Verdict
		reason   string
		attempts int
		passes   int
		runs     int  // trial results paid for
		noScript bool // solved, but its solve.sh cannot pass as an oracle
	}{
		{"solved at the second attempt", okVerifier, writes(func(a string) string {
			if a == "0" {
				return "echo no > /app/out.txt\n"
			}
			return "echo ok > /app/out.txt\n"
		}), true, "", "", 2, 1, 1 + 3 + 1 + 1, false},
		{"solved by typing into cat: a script cannot redo it", okVerifier, typesIntoCat, true, "", "", 1, 1, 3 + 1 + 1, true},
		{"never solved", okVerifier, writes(func(string) string { return "echo no > /app/out.txt\n" }), false, "", "", 3, 0, 3, false},
		{"verifier flips on re-verification", flipVerifier, writes(func(string) string { return "echo ok > /app/out.txt\n" }),
			false, pipeline.Drop, filters.ReasonFlakyVerifier, 1, 1, 2, false},
		{"replay fails in a fresh sandbox", tokenVerifier, tokenPolicy, false, pipeline.Drop, filters.ReasonFlakySolutionOrEnv, 1, 1, 3 + 1, false},
		{"policy endpoint down", okVerifier, down, false, pipeline.Error, filters.ReasonProofLost, 3, 0, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, tk := proverItem(t, "prove-"+strings.NewReplacer(" ", "-", ":", "").Replace(tc.name), tc.testSh)
			store := t.TempDir()
			log := filters.NewAttemptLog()
			p := filters.PolicyProver{Runner: &trial.Runner{Backend: d}, Labels: labels, Policy: tc.pol, PolicyID: "scripted",
				Harness: agent.Config{MaxTurns: 4}, Attempts: 3, Reverify: 2, Replays: 1, SolutionsDir: store, Log: log}
			proof, err := p.Prove(context.Background(), it, tk)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", proof.Verdict)
			t.Logf("detail: %s", proof.Detail)
			if proof.Solved != tc.solved || proof.Verdict.Verdict != tc.verdict || proof.Verdict.Reason != tc.reason {
				t.Errorf("solved %t, verdict %q/%q (%s); want %t, %q/%q", proof.Solved, proof.Verdict.Verdict, proof.Verdict.Reason,
					proof.Verdict.Detail, tc.solved, tc.verdict, tc.reason)
			}
			if proof.Attempts != tc.attempts || proof.Passes != tc.passes || len(proof.Runs) != tc.runs {
				t.Errorf("%d attempts, %d passes, %d runs; want %d, %d, %d", proof.Attempts, proof.Passes, len(proof.Runs), tc.attempts, tc.passes, tc.runs)
			}
			dir := filepath.Join(store, filters.SolutionDirName(it.Record.Blob))
			script, serr := os.ReadFile(filepath.Join(dir, filters.SolutionSubdir, "solve.sh"))
			if !tc.solved {
				if serr == nil || proof.Solution != "" {
					t.Errorf("a solution was stored for an unproven task: %s", proof.Solution)
				}
				return
			}
			if _, err := os.Stat(filepath.Join(dir, filters.TrajectoryFile)); err != nil {
				t.Errorf("no trajectory stored: %v", err)
			}
			if tc.noScript {
				if serr == nil || proof.Solution != "" || !strings.Contains(proof.Detail, "did not pass as an oracle") {
					t.Errorf("a solve.sh that cannot work was stored (%q): %s", proof.Solution, proof.Detail)
				}
				return
			}
			if serr != nil || proof.Solution != dir || !strings.Contains(string(script), "echo ok > /app/out.txt\n") {
				t.Fatalf("solve.sh %q (%v), solution %q", script, serr, proof.Solution)
			}
			var traj agent.Trajectory
			if data, err := os.ReadFile(filepath.Join(dir, filters.TrajectoryFile)); err != nil || json.Unmarshal(data, &traj) != nil || len(traj.Turns) == 0 {
				t.Errorf("trajectory.json: %v", err)
			}

			// A rerun with only the trajectory stored (no solve.sh) replays
			// it instead of paying the policy, even one that is down now.
			if err := os.Remove(filepath.Join(dir, filters.SolutionSubdir, "solve.sh")); err != nil {
				t.Fatal(err)
			}
			again := p
			again.Policy, again.Log = down, nil
			proof2, err := again.Prove(context.Background(), it, tk)
			if err != nil {
				t.Fatal(err)
			}
			if !proof2.Solved || proof2.Attempts != 0 || proof2.Solution != dir || !strings.Contains(proof2.Detail, "stored in an earlier run") {
				t.Errorf("rerun from the stored trajectory: solved %t after %d attempts, solution %q: %s", proof2.Solved, proof2.Attempts, proof2.Solution, proof2.Detail)
			}

			// The difficulty stage reuses the attempts: no sandbox.
			cs := &countingStarts{Backend: d}
			diff := filters.Difficulty{Runner: &trial.Runner{Backend: cs}, Labels: labels, Policy: tc.pol, PolicyID: "scripted",
				Harness: agent.Config{MaxTurns: 4}, Attempts: 3, Prior: log}
			out := diff.Process(context.Background(), it)
			if out.Reason != filters.ReasonSolved || cs.n.Load() != 0 || !strings.Contains(out.Detail, "reused") {
				t.Errorf("difficulty after the proof: %s/%s %q with %d sandboxes", out.Verdict, out.Reason, out.Detail, cs.n.Load())
			}
		})
	}
}
