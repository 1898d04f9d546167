package filters

import (
	"testing"

	"github.com/otcurate/otcurate/policy/builtin"
	"github.com/otcurate/otcurate/trial"
)

// TestAttemptLog: attempts are handed over once, and only to a stage
// drawing them with the same settings.
func TestAttemptLog(t *testing.T) {
	one := []trial.Result{{Outcome: trial.Scored, Log: "long log", Trajectory: "traj"}}
	for _, tc := range []struct {
		name            string
		putHash, putSet string
		takeSet         string
		want            bool
	}{
		{"same settings", "h", "policy=a", "policy=a", true},
		{"other settings", "h", "policy=a", "policy=b", false},
		{"no hash", "", "policy=a", "policy=a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewAttemptLog()
			l.put(tc.putHash, tc.putSet, one)
			a, ok := l.take(tc.putHash, tc.takeSet)
			if ok != tc.want {
				t.Fatalf("take: %t, want %t", ok, tc.want)
			}
			if ok && (len(a.Results) != 1 || a.Results[0].Log != "" || a.Results[0].Trajectory != nil) {
				t.Errorf("logged %+v: want the outcome without log or trajectory", a.Results)
			}
			if _, again := l.take(tc.putHash, tc.takeSet); again {
				t.Errorf("taken twice")
			}
		})
	}
	var none *AttemptLog
	if _, ok := none.take("h", "s"); ok {
		t.Errorf("a nil log handed attempts over")
	}
}

// TestBuildWiresProver: the flaky stage gets the configured prover with
// the run's runner and labels; a prover without a policy is refused.
func TestBuildWiresProver(t *testing.T) {
	r := &trial.Runner{}
	labels := map[string]string{"run": "x"}
	stages, err := Build([]string{StageValidate, StageFlaky}, Options{Runner: r, Labels: labels,
		Prover: &PolicyProver{Policy: builtin.New(1), PolicyID: "b", Attempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	var f Flaky
	for _, s := range stages {
		if x, ok := s.(Flaky); ok {
			f = x
		}
	}
	p, ok := f.Prover.(PolicyProver)
	if !ok || p.Runner != r || p.Labels["run"] != "x" || p.Attempts != 3 {
		t.Errorf("flaky's prover: %#v", f.Prover)
	}
	if _, err := Build([]string{StageValidate, StageFlaky}, Options{Runner: r, Prover: &PolicyProver{}}); err == nil {
		t.Errorf("a prover without a policy was accepted")
	}
	if fp := p.Fingerprint(); fp == (PolicyProver{Policy: builtin.New(1), PolicyID: "b", Attempts: 4, Runner: r}).Fingerprint() {
		t.Errorf("the fingerprint ignores k: %s", fp)
	}
}
