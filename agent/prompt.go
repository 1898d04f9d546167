package agent

import (
	"fmt"
	"strings"
)

// The prompts follow the terminus-2 JSON protocol (Harbor's
// terminus-json-plain template): the same reply schema, the same rules
// for keystrokes and durations, the same two-step completion. The wording
// is otcurate's own.

const firstPromptTemplate = `You are an AI assistant solving a command-line task in a Linux environment. You are given the task and the output of the commands run so far; you solve the task by sending batches of shell commands.

Answer with a JSON object of this form:

{
  "analysis": "What does the terminal show? What is done, and what is left?",
  "plan": "What you will run next, and why.",
  "commands": [
    {"keystrokes": "ls -la\n", "duration": 0.1},
    {"keystrokes": "cd project\n", "duration": 0.1}
  ],
  "task_complete": false
}

Required fields: "analysis" (string), "plan" (string), "commands" (array of command objects).
Optional field: "task_complete" (boolean, false when absent): true when you believe the task is solved.

A command object has:
- "keystrokes" (required): sent to the terminal exactly as written. End a command with a newline (\n) or it will not run. Special keys use tmux names: C-c for Ctrl+C, C-d for Ctrl+D.
- "duration" (optional, seconds, default 1.0, at most 60): how long to wait for the command before the next one is sent. Use 0.1 for instant commands (cd, ls, echo, cat), about 1 for find or gcc, more for builds or long scripts. Prefer short waits: you can always wait again with {"keystrokes": "", "duration": 10.0}.

Notes:
- Keystrokes are typed verbatim; do not add whitespace that is not part of the command.
- Text outside the JSON object is tolerated with a warning; the JSON itself must be valid (escape quotes and backslashes inside strings).
- An empty "commands" array means: wait and show me the terminal again.

Task Description:
%s

Current terminal state:
%s
`

// compactFirstTemplate is the compact prompt (Config.Prompt =
// PromptCompact): the same reply schema in one line, for small models
// whose context or compute cannot afford terminus-2's ~2,000-byte
// protocol text (a byte-level model reads every byte as a token). Its
// section headers are terminus-2's, so whatever parses one parses both.
const compactFirstTemplate = `Solve the task in a Linux shell. Reply with one JSON object: {"analysis": "...", "plan": "...", "commands": [{"keystrokes": "ls\n", "duration": 0.1}], "task_complete": false}

Task Description:
%s

Current terminal state:
%s
`

// PromptStyle chooses the harness's prompt wording.
type PromptStyle string

// Prompt styles.
const (
	PromptTerminus PromptStyle = "terminus" // terminus-2's full protocol text (the default)
	PromptCompact  PromptStyle = "compact"  // one line of protocol; the same reply format
)

// ParsePromptStyle reads a --prompt value ("" is the default, terminus).
func ParsePromptStyle(s string) (PromptStyle, error) {
	switch PromptStyle(s) {
	case "", PromptTerminus:
		return PromptTerminus, nil
	case PromptCompact:
		return PromptCompact, nil
	}
	return "", fmt.Errorf("prompt style must be %s or %s, not %q", PromptTerminus, PromptCompact, s)
}

// First is the first user message in the style.
func (p PromptStyle) First(instruction, terminal string) string {
	if p == PromptCompact {
		return fmt.Sprintf(compactFirstTemplate, strings.TrimRight(instruction, "\n"), terminal)
	}
	return FirstPrompt(instruction, terminal)
}

// Confirm asks for the second task_complete in the style.
func (p PromptStyle) Confirm(output string) string {
	if p == PromptCompact {
		return "Current terminal state:\n" + output +
			"\n\nAre you sure you want to mark the task as complete? If so, include \"task_complete\": true again."
	}
	return ConfirmPrompt(output)
}

// FirstPrompt is the first user message: the protocol, the task and the
// terminal as it is before any command.
func FirstPrompt(instruction, terminal string) string {
	return fmt.Sprintf(firstPromptTemplate, strings.TrimRight(instruction, "\n"), terminal)
}

// ObservationPrompt is the user message after a batch of commands.
func ObservationPrompt(output string, warnings []string) string {
	var b strings.Builder
	if len(warnings) > 0 {
		b.WriteString("Previous response had warnings:\n")
		for _, w := range warnings {
			b.WriteString("WARNINGS: - " + w + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("New Terminal Output:\n")
	b.WriteString(output)
	return b.String()
}

// ParseErrorPrompt feeds a reply that could not be parsed back to the
// model; nothing of that reply was executed.
func ParseErrorPrompt(err error) string {
	return "Previous response had parsing errors:\nERROR: " + err.Error() +
		"\n\nNothing was executed. Please fix these issues and answer again with a valid JSON object as described."
}

// ConfirmPrompt asks for the second task_complete of the two-step
// completion, showing the terminal after the reply's commands ran.
func ConfirmPrompt(output string) string {
	return "Current terminal state:\n" + output +
		"\n\nAre you sure you want to mark the task as complete? This will trigger your solution to be graded and you won't be able to make any further corrections. If so, include \"task_complete\": true in your JSON response again."
}
