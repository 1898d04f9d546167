package reports

import (
	"fmt"
	"io"
	"strings"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
)

// WriteSummary prints the funnel of a run: per stage, tasks in, kept,
// dropped (top reasons) and errors.
func WriteSummary(w io.Writer, s *pipeline.Summary) {
	state := "finished"
	if s.Interrupted {
		state = "INTERRUPTED (re-run the same command to start again)"
	}
	fmt.Fprintf(w, "otcurate: %s in %.1fs — %d tasks in, %d kept\n", state, s.WallSeconds, s.TasksIn, s.TasksKept)
	fmt.Fprintf(w, "%-13s %8s %8s %8s %7s  %s\n", "stage", "in", "kept", "dropped", "errors", "top drop reasons")
	for _, st := range s.Funnel {
		var top []string
		for i, r := range pipeline.SortedReasons(st.DroppedByReason) {
			if i == 4 {
				top = append(top, "…")
				break
			}
			top = append(top, fmt.Sprintf("%s=%d", r, st.DroppedByReason[r]))
		}
		fmt.Fprintf(w, "%-13s %8d %8d %8d %7d  %s\n", st.Stage, st.In, st.Kept, st.Dropped, st.Errors, strings.Join(top, " "))
	}
	if line := ProofLine(s); line != "" {
		fmt.Fprintln(w, line)
	}
	runs, secs, fromLedger := s.SandboxSpend()
	if runs > 0 || fromLedger > 0 {
		fmt.Fprintf(w, "sandboxes: %d runs, %.0f sandbox-seconds this run; %d verdicts reused from the ledger\n", runs, secs, fromLedger)
	}
	for _, f := range s.Output {
		fmt.Fprintf(w, "wrote %s\n", f)
	}
}

// ProofLine states the proof split of a run's output in one line, "kept
// 31: 24 oracle, 0 supplied, 0 policy, 7 unproven (verifier_unproven)",
// from summary.json's kept_by_proof; "" when no stage recorded a proof or
// the run was interrupted (it wrote no output).
func ProofLine(s *pipeline.Summary) string {
	if s.KeptByProof == nil || s.Interrupted {
		return ""
	}
	var parts []string
	var counted int64
	for _, k := range proofOrder(s.KeptByProof) {
		n := s.KeptByProof[k]
		counted += n
		if k == filters.ProofNone {
			parts = append(parts, fmt.Sprintf("%d unproven (%s)", n, filters.ReasonVerifierUnproven))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	if rest := s.TasksKept - counted; rest > 0 {
		parts = append(parts, fmt.Sprintf("%d without a recorded proof", rest))
	}
	return fmt.Sprintf("kept %d: %s", s.TasksKept, strings.Join(parts, ", "))
}
