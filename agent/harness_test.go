package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// task is a small task on the local bookworm image whose verifier checks
// that /app/out.txt holds "ok".
func task(t testing.TB, instruction string) *trial.Task {
	t.Helper()
	testSh := "#!/bin/bash\nif [ \"$(cat /app/out.txt 2>/dev/null)\" = ok ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n"
	entries := []bundle.Entry{
		{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(instruction)},
		{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("version = \"1.0\"\n[agent]\ntimeout_sec = 120\n")},
		{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian:bookworm\nWORKDIR /app\n")},
		{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(testSh)},
	}
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		t.Fatal(err)
	}
	tk, err := trial.LoadTask("harness-task", buf.Bytes(), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// script is a policy that answers with fixed replies, chosen by the
// number of assistant messages so far (stateless, like a model).
type script struct {
	replies []string
	err     error // returned instead of a reply when set
}

func (s *script) Name() string { return "script" }

func (s *script) Complete(ctx context.Context, req policy.Request) (policy.Completion, error) {
	if s.err != nil {
		return policy.Completion{}, s.err
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == policy.RoleAssistant {
			n++
		}
	}
	if n >= len(s.replies) {
		n = len(s.replies) - 1
	}
	return policy.Completion{Content: s.replies[n], Model: "script"}, nil
}

// reply renders a terminus-2 reply.
func reply(complete bool, cmds ...any) string {
	type command struct {
		Keystrokes string  `json:"keystrokes"`
		Duration   float64 `json:"duration"`
	}
	var cs []command
	for i := 0; i < len(cmds); i += 2 {
		cs = append(cs, command{cmds[i].(string), cmds[i+1].(float64)})
	}
	if cs == nil {
		cs = []command{}
	}
	b, _ := json.Marshal(map[string]any{"analysis": "a", "plan": "p", "commands": cs, "task_complete": complete})
	return string(b)
}

// episode starts a sandbox for tk and plays one episode of pol in it.
func episode(t *testing.T, d sandbox.Backend, runID string, tk *trial.Task, pol policy.Policy, cfg agent.Config) (*agent.Trajectory, sandbox.Sandbox) {
	t.Helper()
	ctx := context.Background()
	envFiles, _ := tk.Bundle.Entries("environment")
	img, err := d.Build(ctx, sandbox.Environment{Hash: tk.Bundle.EnvHash, Files: envFiles, BuildTimeout: 10 * time.Minute, Task: tk.Path})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := d.Start(ctx, sandbox.StartSpec{Image: img, Workdir: "/app", Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Stop(context.Background()) })
	h := &agent.Harness{Policy: pol}
	tr, err := h.Run(ctx, sb, agent.Episode{Task: tk.Path, Instruction: "Write ok to /app/out.txt.", Workdir: "/app"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr, sb
}

func cat(t *testing.T, sb sandbox.Sandbox, path string) string {
	t.Helper()
	b, err := sb.Download(context.Background(), path, 1<<20)
	if err != nil {
		t.Fatalf("download %s: %v", path, err)
	}
	return string(b)
}

// TestHarnessProtocol drives the harness with scripted replies through
// the protocol's cases on one engine.
func TestHarnessProtocol(t *testing.T) {
	d, runID := sandboxtest.Backend(t, "test-agent-")
	tk := task(t, "Write ok to /app/out.txt.\n")

	t.Run("state persists, heredoc, two-step completion", func(t *testing.T) {
		pol := &script{replies: []string{
			reply(false, "cd /tmp\n", 0.5, "export GREETING=ok\n", 0.5),
			reply(false, "cat > /app/out.txt <<'EOF'\n$GREETING\nEOF\n", 2.0, "pwd\n", 0.5),
			reply(true),
			reply(false, "sed -i s/GREETING/ok/ /app/out.txt; sed -i 's/^\\$//' /app/out.txt\n", 1.0),
			reply(true),
			reply(true),
		}}
		tr, sb := episode(t, d, runID, tk, pol, agent.Config{})
		if tr.End != agent.Completed || len(tr.Turns) != 6 {
			t.Fatalf("end %s after %d turns, want completed after 6", tr.End, len(tr.Turns))
		}
		if got := cat(t, sb, "/app/out.txt"); got != "ok\n" {
			t.Errorf("out.txt = %q (the quoted heredoc must keep $GREETING literal, then sed fixes it)", got)
		}
		if obs := tr.Turns[1].Observation; !strings.Contains(obs, "/tmp\n") {
			t.Errorf("pwd after cd /tmp in an earlier turn: observation %q", obs)
		}
		confirms := 0
		for _, m := range tr.Messages {
			if m.Role == policy.RoleUser && strings.Contains(m.Content, "Are you sure") {
				confirms++
			}
		}
		if confirms != 2 {
			t.Errorf("%d confirmation prompts, want 2 (a non-complete reply resets the first)", confirms)
		}
		if !strings.HasPrefix(tr.Messages[0].Content, "You are an AI assistant") || !strings.Contains(tr.Messages[0].Content, "Task Description:\nWrite ok to /app/out.txt.") {
			t.Errorf("first prompt: %.200q", tr.Messages[0].Content)
		}
	})

	t.Run("parse errors are fed back and nothing runs", func(t *testing.T) {
		pol := &script{replies: []string{
			`{"analysis": "a", "commands": [{"keystrokes": "echo ok > /app/out.txt\n"}]}`,
			`I will run it now`,
			reply(true, "echo ok > /app/out.txt\n", 1.0),
			reply(true),
		}}
		tr, sb := episode(t, d, runID, tk, pol, agent.Config{})
		if tr.End != agent.Completed {
			t.Fatalf("end %s", tr.End)
		}
		if tr.Turns[0].ParseError == "" || !strings.Contains(tr.Messages[2].Content, "parsing errors") || !strings.Contains(tr.Messages[2].Content, "plan") {
			t.Errorf("turn 0: parse error %q, next prompt %q", tr.Turns[0].ParseError, tr.Messages[2].Content)
		}
		if tr.Turns[1].ParseError == "" {
			t.Errorf("prose without JSON parsed")
		}
		if got := cat(t, sb, "/app/out.txt"); got != "ok\n" {
			t.Errorf("out.txt = %q", got)
		}
	})

	t.Run("waits end at the prompt; C-c interrupts", func(t *testing.T) {
		pol := &script{replies: []string{
			reply(false, "echo quick\n", 30.0),
			reply(false, "sleep 50\n", 0.5, "C-c", 5.0, "echo back > /app/out.txt\n", 30.0),
			reply(true), reply(true),
		}}
		start := time.Now()
		tr, sb := episode(t, d, runID, tk, pol, agent.Config{})
		if tr.Turns[0].ExecSeconds > 2 {
			t.Errorf("echo with a 30 s duration took %.1fs: the wait did not end at the prompt", tr.Turns[0].ExecSeconds)
		}
		if el := time.Since(start); el > 20*time.Second {
			t.Errorf("episode took %s: C-c did not interrupt sleep 50", el)
		}
		if got := cat(t, sb, "/app/out.txt"); got != "back\n" {
			t.Errorf("out.txt = %q", got)
		}
		if !strings.Contains(tr.Turns[0].Observation, "quick") || strings.ContainsRune(tr.Turns[0].Observation, '\x1e') {
			t.Errorf("observation %q", tr.Turns[0].Observation)
		}
	})

	t.Run("long output is truncated head and tail", func(t *testing.T) {
		pol := &script{replies: []string{reply(false, "seq 1 200000\n", 20.0), reply(true), reply(true)}}
		tr, _ := episode(t, d, runID, tk, pol, agent.Config{})
		obs := tr.Turns[0].Observation
		if len(obs) > 10300 || !strings.Contains(obs, "interior bytes omitted") || !strings.Contains(obs, "\n1\n2\n") || !strings.Contains(obs, "199999\n200000\n") {
			t.Errorf("observation of %d bytes: head %q tail %q", len(obs), obs[:min(60, len(obs))], obs[max(0, len(obs)-60):])
		}
	})

	t.Run("turn cap", func(t *testing.T) {
		pol := &script{replies: []string{reply(false, "true\n", 0.2)}}
		tr, _ := episode(t, d, runID, tk, pol, agent.Config{MaxTurns: 3})
		if tr.End != agent.MaxTurns || len(tr.Turns) != 3 {
			t.Errorf("end %s after %d turns", tr.End, len(tr.Turns))
		}
	})

	t.Run("agent timeout", func(t *testing.T) {
		pol := &script{replies: []string{reply(false, "sleep 100\n", 60.0)}}
		start := time.Now()
		tr, _ := episode(t, d, runID, tk, pol, agent.Config{Timeout: 2 * time.Second})
		if tr.End != agent.AgentTimeout || time.Since(start) > 15*time.Second {
			t.Errorf("end %s after %s", tr.End, time.Since(start))
		}
	})

	t.Run("context budget", func(t *testing.T) {
		pol := &script{replies: []string{reply(false, "seq 1 3000\n", 5.0)}}
		tr, _ := episode(t, d, runID, tk, pol, agent.Config{ContextTokens: 3000})
		if tr.End != agent.ContextExceeded {
			t.Errorf("end %s after %d turns", tr.End, len(tr.Turns))
		}
	})

	t.Run("the agent exits its shell", func(t *testing.T) {
		pol := &script{replies: []string{reply(false, "exit\n", 5.0), reply(true)}}
		tr, _ := episode(t, d, runID, tk, pol, agent.Config{})
		if tr.End != agent.ShellExited {
			t.Errorf("end %s", tr.End)
		}
	})
}

// TestHarnessScoredByVerifier runs the harness as a trial actor: the
// verifier scores what the agent did, and a failing backend is an
// infrastructure outcome, not reward 0.
func TestHarnessScoredByVerifier(t *testing.T) {
	d, runID := sandboxtest.Backend(t, "test-agent-")
	tk := task(t, "Write ok to /app/out.txt.\n")
	r := &trial.Runner{Backend: d}
	labels := map[string]string{sandbox.LabelRun: runID}
	ctx := context.Background()

	good := &agent.Harness{Policy: &script{replies: []string{reply(true, "echo ok > /app/out.txt\n", 1.0), reply(true)}}}
	a, err := agent.RunAttempt(ctx, r, tk, good, labels)
	if err != nil {
		t.Fatal(err)
	}
	if a.Result.Outcome != trial.Scored || a.Reward() != 1 || a.Result.Agent != "script" || a.Trajectory == nil {
		t.Fatalf("good agent: %+v", a.Result)
	}

	wrong := &agent.Harness{Policy: &script{replies: []string{reply(true, "echo no > /app/out.txt\n", 1.0), reply(true)}}}
	if a, _ = agent.RunAttempt(ctx, r, tk, wrong, labels); a.Result.Outcome != trial.Scored || a.Reward() != 0 {
		t.Fatalf("wrong agent: %+v", a.Result)
	}

	down := &agent.Harness{Policy: &script{err: &policy.Unavailable{Attempts: 6, Status: 503, Err: fmt.Errorf("service unavailable")}}}
	a, err = agent.RunAttempt(ctx, r, tk, down, labels)
	if err != nil {
		t.Fatal(err)
	}
	if a.Result.Outcome != trial.PolicyUnavailable || !a.Result.Outcome.IsInfra() || a.Result.Reward != nil {
		t.Fatalf("backend down: %+v", a.Result)
	}
}
