package trial

import (
	"math"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox"
)

// TestApplyLimit: a storage limit exceeded blames the task for the
// reference and the control and scores a policy 0; never infrastructure.
func TestApplyLimit(t *testing.T) {
	le := &sandbox.LimitError{Resource: "storage", LimitMB: 512, UsedMB: 700}
	cases := []struct {
		kind    AgentKind
		want    Outcome
		reward0 bool
	}{
		{KindReference, StorageExceeded, false},
		{KindControl, StorageExceeded, false},
		{KindPolicy, Scored, true},
	}
	for _, tc := range cases {
		one := 1.0
		res := Result{Outcome: Scored, Reward: &one}
		applyLimit(&res, tc.kind, le)
		if res.Outcome != tc.want || res.Infra() || res.Passed() {
			t.Errorf("%s: %s (passed %v), want %s", tc.kind, res.Outcome, res.Passed(), tc.want)
		}
		if tc.reward0 != (res.Reward != nil && *res.Reward == 0) {
			t.Errorf("%s: reward %v", tc.kind, res.Reward)
		}
		if res.Detail != le.Error() {
			t.Errorf("%s: detail %q", tc.kind, res.Detail)
		}
	}
}

// TestSecondsBounded: no period overflows into "no limit".
func TestSecondsBounded(t *testing.T) {
	cases := []struct {
		in   float64
		want time.Duration
	}{
		{1.5, 1500 * time.Millisecond},
		{600, 10 * time.Minute},
		{1e12, 24 * time.Hour},
		{math.Inf(1), 24 * time.Hour},
		{math.NaN(), 0},
		{-3, 0},
	}
	for _, tc := range cases {
		if got := seconds(tc.in); got != tc.want {
			t.Errorf("seconds(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
