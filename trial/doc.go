// Package trial runs one task with one agent (oracle or nop) in a sandbox
// and scores it with the Harbor verifier contract: tests copied to /tests
// only at verify time, test.sh run under the verifier timeout, the reward
// read from /logs/verifier/reward.txt or reward.json. Every way this can go
// wrong is its own Outcome; a reward is reported only when it is
// trustworthy.
package trial
