package trial

import (
	"context"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
)

// every outcome with the class it must have, written out by hand.
var outcomeClass = map[Outcome]string{
	Scored:               "scored",
	BuildFailed:          "defect",
	BuildTimeout:         "defect",
	BuildNeedsNetwork:    "defect",
	EnvironmentUnhealthy: "defect",
	UnsupportedEnv:       "defect",
	NoSolution:           "defect",
	SolveTimeout:         "defect",
	VerifierTimeout:      "defect",
	RewardMissing:        "defect",
	RewardInvalid:        "defect",
	RewardAmbiguous:      "defect",
	VerifierNeedsNetwork: "defect",
	StorageExceeded:      "defect",
	EngineUnavailable:    "infra",
	OutOfDisk:            "infra",
	InfraError:           "infra",
	PolicyUnavailable:    "infra",
}

// namedOracle is a policy actor that calls itself "oracle".
type namedOracle struct{}

func (namedOracle) Name() string { return string(Oracle) }
func (namedOracle) Act(context.Context, sandbox.Sandbox, *Task) (ActReport, error) {
	return ActReport{}, nil
}

func TestKindOf(t *testing.T) {
	cases := []struct {
		actor Actor
		want  AgentKind
	}{
		{OracleActor{}, KindReference},
		{&OracleActor{}, KindReference},
		{NopActor{}, KindControl},
		{namedOracle{}, KindPolicy}, // a name does not make an actor the reference
	}
	for _, tc := range cases {
		if got := KindOf(tc.actor); got != tc.want {
			t.Errorf("KindOf(%T) = %s, want %s", tc.actor, got, tc.want)
		}
	}
}

// TestPredicates classifies every outcome, for every agent kind, with and
// without an agent timeout, and with rewards below, at and above 1.
func TestPredicates(t *testing.T) {
	agents := map[AgentKind]Agent{KindReference: Oracle, KindControl: Nop, KindPolicy: "builtin"}
	one, zero, half, two := 1.0, 0.0, 0.5, 2.0
	for o, class := range outcomeClass {
		for kind, name := range agents {
			for _, timedOut := range []bool{false, true} {
				rewards := []*float64{nil}
				if o == Scored || o == SolveTimeout {
					rewards = []*float64{&zero, &half, &one, &two}
				}
				for _, rw := range rewards {
					res := Result{Agent: name, Outcome: o, Reward: rw}
					if timedOut {
						applyTimeout(&res, kind, 30)
					}
					want := class
					// The rule: the reference's timeout blames the task
					// when the verifier scored it; anyone else's reward
					// stands.
					if timedOut && kind == KindReference && o == Scored {
						want = "defect"
						if res.Outcome != SolveTimeout {
							t.Errorf("%s %s timed out: outcome %s, want %s", kind, o, res.Outcome, SolveTimeout)
						}
					} else if res.Outcome != o {
						t.Errorf("%s %s (timed out %t): outcome became %s", kind, o, timedOut, res.Outcome)
					}
					warned := len(res.Warnings) > 0 && strings.Contains(res.Warnings[0], "reward stands")
					if wantWarn := timedOut && kind != KindReference; warned != wantWarn {
						t.Errorf("%s %s (timed out %t): warning %q, want one: %t", kind, o, timedOut, res.Warnings, wantWarn)
					}
					got := map[string]bool{"scored": res.Scored(), "defect": res.TaskDefect(), "infra": res.Infra()}
					for c, v := range got {
						if v != (c == want) {
							t.Errorf("%s %s (timed out %t, reward %v): %s() = %t, want class %s", kind, o, timedOut, deref(rw), c, v, want)
						}
					}
					wantPass := want == "scored" && rw != nil && *rw >= 1
					if res.Passed() != wantPass {
						t.Errorf("%s %s (timed out %t, reward %v): Passed() = %t", kind, o, timedOut, deref(rw), res.Passed())
					}
				}
			}
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestAfterAgent: exactly the defects of the verifier's run (which an
// agent can cause from inside its sandbox) are AfterAgent; build and start
// defects, scored and infrastructure outcomes are not.
func TestAfterAgent(t *testing.T) {
	after := map[Outcome]bool{VerifierTimeout: true, RewardMissing: true, RewardInvalid: true,
		RewardAmbiguous: true, VerifierNeedsNetwork: true, StorageExceeded: true, SolveTimeout: true}
	for _, o := range []Outcome{Scored, BuildFailed, BuildTimeout, BuildNeedsNetwork,
		EnvironmentUnhealthy, UnsupportedEnv, NoSolution, SolveTimeout, VerifierTimeout,
		RewardMissing, RewardInvalid, RewardAmbiguous, VerifierNeedsNetwork, StorageExceeded,
		EngineUnavailable, OutOfDisk, InfraError, PolicyUnavailable} {
		if got := o.AfterAgent(); got != after[o] {
			t.Errorf("%s.AfterAgent() = %t, want %t", o, got, after[o])
		}
		if o.AfterAgent() && !o.IsTaskDefect() {
			t.Errorf("%s is AfterAgent but not a task defect", o)
		}
	}
}
