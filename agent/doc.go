// Package agent is the agent harness: a terminus-2-compatible loop that
// shows a policy (package policy) the task and the terminal, parses its
// JSON replies (package agent/terminus), types their keystrokes into a
// persistent interactive shell on a terminal in the sandbox (Shell: the
// semantics of the reference harness's tmux pane, without tmux in the
// image) and records the whole episode as a Trajectory: messages,
// turns, commands, token counts, and where the time went.
//
// Harness plugs into trial.Runner as an Actor, so the verifier contract,
// retries and sandbox lifecycle are the same as for the oracle (`otcurate
// run` uses it that way); RunAttempt plays and scores one episode in a
// fresh sandbox, which is what the trainer and the traces exporter call.
package agent
