// Package trial runs one task with one agent (the oracle, the nop agent or
// an Actor such as the agent harness) in a sandbox and scores it with the
// Harbor verifier contract: tests copied to /tests only at verify time,
// test.sh run under the verifier timeout, the reward read from
// /logs/verifier/reward.txt or reward.json. Every way this can go wrong is
// its own Outcome; a reward is reported only when it is trustworthy.
//
// What a result means is decided here and nowhere else: callers ask
// Result.Scored, Passed, TaskDefect and Infra, and an agent that runs out
// of time is judged by AgentKind.TimeoutIsDefect (the oracle's timeout
// blames the task, a policy's is the policy's failure and stays scored).
package trial
