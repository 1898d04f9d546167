package agent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/agent/terminus"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
)

// recorded builds a trajectory whose turns typed cmds (keystrokes,
// duration pairs per turn).
func recorded(turns ...[]terminus.Command) *agent.Trajectory {
	tr := &agent.Trajectory{Task: "t", Policy: "p"}
	for i, cs := range turns {
		tr.Turns = append(tr.Turns, agent.Turn{Index: i, Commands: cs})
	}
	return tr
}

func cmd(keys string, d float64) terminus.Command {
	return terminus.Command{Keystrokes: keys, Duration: d}
}

// TestSolveScript renders trajectories and runs the scripts with the
// host's bash in a scratch directory: the files they leave are what the
// terminal would have left.
func TestSolveScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, tc := range []struct {
		name  string
		traj  *agent.Trajectory
		files map[string]string // relative to the workdir
		notes []string          // substrings of the notes, in any order
	}{
		{"state carries over turns and a heredoc spans keystrokes",
			recorded([]terminus.Command{cmd("mkdir d && cd d\n", 0.1), cmd("export X=ok\n", 0.1)},
				[]terminus.Command{cmd("cat > out.txt <<EOF\n", 0.1), cmd("$X\nEOF\n", 0.5)}),
			map[string]string{"d/out.txt": "ok\n"}, nil},
		{"a line typed in two keystrokes, Enter as a key name",
			recorded([]terminus.Command{cmd("echo 'a b' > ", 0.1), cmd("out.txt", 0.1), cmd("Enter", 0.1)}),
			map[string]string{"out.txt": "a b\n"}, nil},
		{"C-c discards an unentered line; waits are dropped",
			recorded([]terminus.Command{cmd("rm -rf /tmp/x", 0.1), cmd("C-c", 0.1), cmd("", 5), cmd("echo kept > out.txt\n", 0.1)}),
			map[string]string{"out.txt": "kept\n"}, []string{"C-c discarded", "waits are dropped"}},
		{"C-c after a command is a comment",
			recorded([]terminus.Command{cmd("echo one > out.txt\n", 0.1), cmd("C-c", 0.1), cmd("echo two >> out.txt\n", 0.1)}),
			map[string]string{"out.txt": "one\ntwo\n"}, []string{"runs to completion"}},
		{"C-d ends the shell; unentered text is left out",
			recorded([]terminus.Command{cmd("echo a > out.txt\n", 0.1), cmd("C-d", 0.1), cmd("echo b > out.txt\n", 0.1)}),
			map[string]string{"out.txt": "a\n"}, []string{"C-d ended the shell"}},
		{"unentered tail",
			recorded([]terminus.Command{cmd("echo a > out.txt\n", 0.1), cmd("echo b > out.txt", 0.1)}),
			map[string]string{"out.txt": "a\n"}, []string{"never entered"}},
		{"special keys",
			recorded([]terminus.Command{cmd("Up", 0.1), cmd("echo a > out.txt\n", 0.1)}),
			map[string]string{"out.txt": "a\n"}, []string{"special keys"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script, notes := agent.SolveScript(tc.traj, dir)
			if !strings.HasPrefix(string(script), "#!/bin/bash\n") {
				t.Errorf("no shebang: %q", script)
			}
			name := filepath.Join(t.TempDir(), "solve.sh")
			if err := os.WriteFile(name, script, 0o755); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("bash", name).CombinedOutput(); err != nil {
				t.Fatalf("solve.sh: %v\n%s\n--- script:\n%s", err, out, script)
			}
			for f, want := range tc.files {
				got, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q (%v), want %q\n--- script:\n%s", f, got, err, want, script)
				}
			}
			for _, want := range tc.notes {
				if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) }) {
					t.Errorf("notes %q lack %q", notes, want)
				}
			}
			if len(tc.notes) == 0 && len(notes) > 0 {
				t.Errorf("unexpected notes %q", notes)
			}
		})
	}
}

// TestReplayReproducesEpisode records an episode of a scripted policy and
// replays it through the harness into a fresh sandbox: the replay types
// the same commands and leaves the same file.
func TestReplayReproducesEpisode(t *testing.T) {
	d, runID := sandboxtest.Backend(t, "test-agent-replay-")
	tk := task(t, "Write ok to /app/out.txt.\n")
	pol := &script{replies: []string{
		`not JSON at all`,
		reply(false, "cd /tmp\n", 0.2, "export V=ok\n", 0.2),
		reply(true, "echo $V > /app/out.txt\n", 0.5),
		reply(true),
	}}
	orig, _ := episode(t, d, runID, tk, pol, agent.Config{})
	if orig.End != agent.Completed {
		t.Fatalf("recorded episode ended %s", orig.End)
	}
	rep := agent.Replay{Trajectory: orig}
	again, sb := episode(t, d, runID, tk, rep, agent.ReplayConfig(agent.Config{}, orig))
	if got := cat(t, sb, "/app/out.txt"); got != "ok\n" {
		t.Errorf("replayed out.txt = %q", got)
	}
	if again.End != agent.Completed || len(again.Turns) != len(orig.Turns) {
		t.Errorf("replay ended %s after %d turns, recorded %s after %d", again.End, len(again.Turns), orig.End, len(orig.Turns))
	}
	if !slices.Equal(again.Commands(), orig.Commands()) {
		t.Errorf("replay typed %q, recorded %q", again.Commands(), orig.Commands())
	}
	// Past the recording: complete, nothing typed.
	c, err := rep.Complete(context.Background(), policy.Request{Messages: make([]policy.Message, 0)})
	if err != nil || c.Content != orig.Turns[0].Completion.Content {
		t.Errorf("first reply %q, %v", c.Content, err)
	}
	msgs := []policy.Message{}
	for range orig.Turns {
		msgs = append(msgs, policy.Message{Role: policy.RoleAssistant})
	}
	c, _ = rep.Complete(context.Background(), policy.Request{Messages: msgs})
	if r, err := terminus.Parse(c.Content); err != nil || !r.TaskComplete || len(r.Commands) != 0 {
		t.Errorf("past the recording: %q (%v)", c.Content, err)
	}
}
