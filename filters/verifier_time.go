package filters

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/otcurate/otcurate/pipeline"
)

// ReasonSlowRelative drops a verifier much slower than the pool's.
const (
	ReasonSlowRelative = "slow_verifier_relative"
	ReasonVerifierTime = "verifier_time_ok"
)

// VerifierTime is the relative half of the slow-verifier rule (flaky
// applies the absolute limit): once every task has been through flaky, a
// task whose median test.sh time exceeds Factor × the median over the
// kept tasks (and at least Floor) is dropped. A verifier 10× slower than
// its peers costs 10× the sandbox time in every RL step.
type VerifierTime struct {
	Factor float64       // default 10
	Floor  time.Duration // never drop below this; default 2 s
}

// Name implements pipeline.Stage.
func (VerifierTime) Name() string { return StageVerifierTime }

// Decide implements pipeline.SetStage.
func (s VerifierTime) Decide(ctx context.Context, tasks []*pipeline.Task) ([]pipeline.Outcome, error) {
	if s.Factor <= 0 {
		s.Factor = 10
	}
	if s.Floor <= 0 {
		s.Floor = 2 * time.Second
	}
	times := make([]float64, len(tasks))
	var known []float64
	for i, t := range tasks {
		times[i] = -1
		for _, m := range t.Marks {
			if ms := m.Measured(); m.Stage == StageFlaky && ms.ScoreSeconds != nil {
				times[i] = *ms.ScoreSeconds
			}
		}
		if times[i] >= 0 {
			known = append(known, times[i])
		}
	}
	outs := make([]pipeline.Outcome, len(tasks))
	if len(known) == 0 {
		for i := range outs {
			outs[i] = pipeline.KeepOutcome(ReasonVerifierTime, "no verifier times measured (flaky did not run): nothing to compare")
		}
		return outs, nil
	}
	sort.Float64s(known)
	med := known[len(known)/2]
	limit := max(s.Factor*med, s.Floor.Seconds())
	for i, v := range times {
		switch {
		case v < 0:
			outs[i] = pipeline.KeepOutcome(ReasonVerifierTime, "no verifier time for this task")
		case v > limit:
			outs[i] = pipeline.DropOutcome(ReasonSlowRelative, fmt.Sprintf("test.sh median %.2fs > %.2fs (%g× the pool median %.2fs, floor %s)", v, limit, s.Factor, med, s.Floor))
		default:
			outs[i] = pipeline.KeepOutcome(ReasonVerifierTime, fmt.Sprintf("test.sh median %.2fs ≤ %.2fs (%g× the pool median %.2fs)", v, limit, s.Factor, med))
		}
		if v >= 0 {
			vv := v
			outs[i].ScoreSeconds = &vv
		}
	}
	return outs, nil
}
