package filters

import (
	"sync"

	"github.com/otcurate/otcurate/trial"
)

// Attempts are the policy attempts the prover ran on one task, in order:
// each attempt's first verifier result, stripped of logs and trajectory.
type Attempts struct {
	Results []trial.Result
}

// AttemptLog hands the policy attempts the flaky stage's prover paid for
// to the difficulty stage of the same run, so a task's attempts are not
// paid twice when both stages run with the same policy and harness
// settings. It is safe for concurrent use. An entry is forgotten when the
// difficulty stage takes it; a task the flaky stage dropped leaves its
// small entry until the run ends.
type AttemptLog struct {
	mu sync.Mutex
	m  map[string]loggedAttempts
}

type loggedAttempts struct {
	settings string
	a        Attempts
}

// NewAttemptLog returns an empty log.
func NewAttemptLog() *AttemptLog { return &AttemptLog{m: map[string]loggedAttempts{}} }

// put records a task's attempts (by content hash) under the settings that
// drew them.
func (l *AttemptLog) put(hash, settings string, rs []trial.Result) {
	if l == nil || hash == "" {
		return
	}
	a := Attempts{Results: make([]trial.Result, len(rs))}
	for i, r := range rs {
		a.Results[i] = trial.Result{Task: r.Task, Agent: r.Agent, Outcome: r.Outcome, Reward: r.Reward, Detail: r.Detail}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[hash] = loggedAttempts{settings: settings, a: a}
}

// take returns and forgets a task's attempts when they were drawn under
// settings.
func (l *AttemptLog) take(hash, settings string) (Attempts, bool) {
	if l == nil {
		return Attempts{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[hash]
	if !ok {
		return Attempts{}, false
	}
	delete(l.m, hash)
	return e.a, e.settings == settings
}
