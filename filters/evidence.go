package filters

import (
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/trial"
)

// spend accumulates what a sandbox stage spent on one task, session by
// session, into the task's pipeline.Evidence.
type spend struct {
	ev       pipeline.Evidence
	verifier []float64
}

// add records one session's results (one Runner.Run or Probe call without
// Isolate: the build, start, solve and teardown are the session's, each
// result adds its own verify phase).
func (s *spend) add(res []trial.Result) {
	if len(res) == 0 {
		return
	}
	d := res[0].Durations
	if d.Start > 0 {
		s.ev.Sandboxes++
	}
	s.ev.BuildSeconds += d.Build
	s.ev.StartSeconds += d.Start
	s.ev.Teardown += d.Teardown
	s.ev.SandboxSeconds += d.Build + d.Start + d.Solve + d.Teardown
	for _, r := range res {
		if r.Sandboxes > 0 { // the verifier (or the agent) actually ran
			s.ev.Runs++
			s.ev.SandboxSeconds += r.Durations.Verify
			if r.Scored() {
				s.verifier = append(s.verifier, r.Durations.Verifier)
			}
			if r.Passed() {
				s.ev.Passes++
			}
		}
		if r.Log != "" {
			s.ev.Log = r.Log
		}
	}
}

// attach puts the evidence on an outcome; the log excerpt is kept only for
// drops and errors, where it explains the verdict.
func (s *spend) attach(out pipeline.Outcome) pipeline.Outcome {
	ev := s.ev
	ev.VerifierSeconds = median(s.verifier)
	if out.Verdict == pipeline.Keep {
		ev.Log = ""
	}
	out.Evidence = &ev
	return out
}
