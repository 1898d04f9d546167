package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/otcurate/otcurate/agent/terminus"
	"github.com/otcurate/otcurate/policy"
)

// Replay is a policy that answers with a recorded trajectory's replies,
// one per turn, in order, whatever the terminal shows: played through the
// harness into a fresh sandbox, it types the same keystrokes with the same
// waits as the recorded episode. It is stateless (the turn is the number
// of assistant messages so far), so it is safe for concurrent use. Past
// the recording it declares the task complete without typing anything.
type Replay struct {
	Trajectory *Trajectory
}

var _ policy.Policy = Replay{}

// Name is "replay:" and the recorded policy's name.
func (r Replay) Name() string { return "replay:" + r.Trajectory.Policy }

// replayEnd is the reply past the recording.
const replayEnd = `{"analysis": "end of the recording", "plan": "", "commands": [], "task_complete": true}`

// Complete returns the recorded reply of the next turn.
func (r Replay) Complete(ctx context.Context, req policy.Request) (policy.Completion, error) {
	if err := ctx.Err(); err != nil {
		return policy.Completion{}, err
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == policy.RoleAssistant {
			n++
		}
	}
	if n >= len(r.Trajectory.Turns) {
		return policy.Completion{Content: replayEnd, FinishReason: "stop", Model: r.Name()}, nil
	}
	c := r.Trajectory.Turns[n].Completion
	return policy.Completion{Content: c.Content, FinishReason: c.FinishReason, Model: r.Name()}, nil
}

// ReplayConfig is the harness configuration that replays traj recorded
// under cfg: exactly as many turns as were recorded, no context budget (the
// replayed terminal may print more than the recorded one did, and the
// recorded episode was not cut by it before its last turn), the same
// wall-time limit and observation truncation.
func ReplayConfig(cfg Config, traj *Trajectory) Config {
	cfg.MaxTurns = max(len(traj.Turns), 1)
	cfg.ContextTokens = 1 << 30
	cfg.Rollout = false
	return cfg
}

// SolveScript renders the commands of traj as a bash script that redoes
// them, in order, in one shell (cd and exported variables carry over
// between commands as in the harness's terminal), for use as a task's
// solution/solve.sh. The harness types keystrokes into an interactive
// terminal; a script runs each command to completion before the next, so
// some of what a terminal does cannot be reproduced. notes lists what this
// trajectory used of it:
//   - waits (a command's duration, an empty "wait" command) are dropped:
//     each command runs to completion, and nothing is interrupted;
//   - C-c on a typed, not yet entered line discards it (as the terminal
//     does); C-c after an entered command would have interrupted it if it
//     was still running, and here it is only a comment;
//   - C-d on an empty line ends the shell (the rest is left out); other
//     special keys (arrows, Escape, ...) and keystrokes meant for an
//     interactive program reading the terminal (an editor, a REPL, input
//     typed into `cat > file`) become script lines or comments, not input;
//   - an interactive shell's history expansion (!) does not happen;
//   - text typed but never entered is left out.
//
// workdir, when set, is where the terminal started (the task's workdir).
func SolveScript(traj *Trajectory, workdir string) (script []byte, notes []string) {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "# Discovered by otcurate: the commands %s typed (task %s), replayed in order.\n", traj.Policy, traj.Task)
	b.WriteString("# The harness's terminal environment:\n")
	b.WriteString("export TERM=dumb PAGER=cat GIT_PAGER=cat DEBIAN_FRONTEND=noninteractive\n")
	if workdir != "" {
		fmt.Fprintf(&b, "cd %s || exit 1\n", shellQuote(workdir))
	}
	var pending strings.Builder // typed, not yet entered
	note := func(s string) {
		for _, n := range notes {
			if n == s {
				return
			}
		}
		notes = append(notes, s)
	}
	flush := func() {
		text := pending.String()
		if i := strings.LastIndexByte(text, '\n'); i >= 0 {
			b.WriteString(text[:i+1])
			pending.Reset()
			pending.WriteString(text[i+1:])
		}
	}
	ended := false
	for ti, turn := range traj.Turns {
		for _, c := range turn.Commands {
			if ended {
				break
			}
			if c.Keystrokes == "" {
				if c.Duration > 0 {
					note("waits are dropped: every command runs to completion")
				}
				continue
			}
			keys := string(terminus.KeySequence(c.Keystrokes))
			if keys == c.Keystrokes { // typed verbatim
				if strings.ContainsFunc(keys, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }) {
					note(fmt.Sprintf("turn %d: control characters inside typed text are kept as text", ti))
				}
				pending.WriteString(keys)
				flush()
				continue
			}
			switch keys {
			case "\n":
				pending.WriteString("\n")
				flush()
			case "\t":
				pending.WriteString("\t")
			case "\x03": // C-c
				if pending.Len() > 0 {
					pending.Reset()
					note("C-c discarded a typed line that was never entered")
				} else {
					fmt.Fprintf(&b, "# turn %d: C-c (it interrupted the command above if that was still running; here it ran to completion)\n", ti)
					note("C-c after a command is not reproduced: the command runs to completion")
				}
			case "\x04": // C-d
				if pending.Len() == 0 {
					fmt.Fprintf(&b, "# turn %d: C-d ended the shell\n", ti)
					note("C-d ended the shell: later keystrokes are left out")
					ended = true
				} else {
					note("C-d on a typed line is not reproduced")
				}
			default:
				fmt.Fprintf(&b, "# turn %d: key %s not reproduced\n", ti, shellQuote(c.Keystrokes))
				note(fmt.Sprintf("special keys are not reproduced (%s)", c.Keystrokes))
			}
		}
	}
	if pending.Len() > 0 {
		note("text typed but never entered is left out")
	}
	return []byte(b.String()), notes
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
