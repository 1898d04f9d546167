// Package agent is the agent harness: a terminus-2-compatible loop that
// shows a policy the task and the terminal, parses its JSON replies,
// types their keystrokes into a persistent shell in the sandbox and
// records the whole trajectory. It plugs into trial.Runner as an Actor,
// so the verifier contract, retries and sandbox lifecycle are the same as
// for the oracle.
package agent
