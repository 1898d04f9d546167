package trial

import "testing"

func TestClassifyReward(t *testing.T) {
	cases := []struct {
		name       string
		txt, js    string
		hasT, hasJ bool
		want       Outcome
		reward     float64
	}{
		{"txt one", "1\n", "", true, false, Scored, 1},
		{"txt zero", "0", "", true, false, Scored, 0},
		{"txt fraction", " 0.25 ", "", true, false, Scored, 0.25},
		{"json", "", `{"reward": 1, "tests_passed": 3}`, false, true, Scored, 1},
		{"both agree", "1", `{"reward": 1.0}`, true, true, Scored, 1},
		{"both disagree", "1", `{"reward": 0}`, true, true, RewardAmbiguous, 0},
		{"missing", "", "", false, false, RewardMissing, 0},
		{"empty txt", "", "", true, false, RewardInvalid, 0},
		{"garbage txt", "PASSED", "", true, false, RewardInvalid, 0},
		{"nan txt", "nan", "", true, false, RewardInvalid, 0},
		{"inf txt", "+Inf", "", true, false, RewardInvalid, 0},
		{"pytest output in txt", "===== 3 passed in 0.1s =====\n1", "", true, false, RewardInvalid, 0},
		{"json not object", "", `[1]`, false, true, RewardInvalid, 0},
		{"json no reward key", "", `{"score": 1}`, false, true, RewardInvalid, 0},
		{"json string value", "", `{"reward": "1"}`, false, true, RewardInvalid, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r Result
			classifyReward(&r, []byte(tc.txt), tc.hasT, []byte(tc.js), tc.hasJ)
			if r.Outcome != tc.want {
				t.Fatalf("outcome %s (%s), want %s", r.Outcome, r.Detail, tc.want)
			}
			if tc.want == Scored && (r.Reward == nil || *r.Reward != tc.reward) {
				t.Fatalf("reward %v, want %v", r.Reward, tc.reward)
			}
			if tc.want != Scored && r.Reward != nil {
				t.Fatalf("a %s outcome carries a reward", r.Outcome)
			}
		})
	}
}

func TestLooksOffline(t *testing.T) {
	offline := []string{
		"Err:1 http://archive.ubuntu.com/ubuntu noble InRelease\n  Temporary failure resolving 'archive.ubuntu.com'",
		"curl: (6) Could not resolve host: astral.sh",
		"pip: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution",
	}
	for _, s := range offline {
		if !looksOffline(s) {
			t.Errorf("not detected: %q", s)
		}
	}
	if looksOffline("===== 3 passed in 0.12s =====") {
		t.Error("false positive on pytest output")
	}
}

func TestOutcomeClasses(t *testing.T) {
	for _, o := range []Outcome{EngineUnavailable, OutOfDisk, InfraError} {
		if !o.IsInfra() || o.IsTaskDefect() {
			t.Errorf("%s must be infrastructure", o)
		}
	}
	for _, o := range []Outcome{BuildFailed, RewardMissing, VerifierTimeout, VerifierNeedsNetwork} {
		if o.IsInfra() || !o.IsTaskDefect() {
			t.Errorf("%s must be a task defect", o)
		}
	}
	if Scored.IsInfra() || Scored.IsTaskDefect() {
		t.Error("scored is neither")
	}
}
