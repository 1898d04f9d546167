package rundir

// ScoreKind is what a stage's score measures. On disk every kind is the
// same number: `score` in decisions.jsonl and the ledger, <stage>_score in
// the manifest; in Go it is Seconds or Rate.
type ScoreKind uint8

// Score kinds.
const (
	NoScore      ScoreKind = iota // the stage measures nothing
	ScoreSeconds                  // a duration in seconds (median test.sh time)
	ScoreRate                     // a fraction in [0, 1] (a pass rate)
)

// StageFormat is how a stage's results are written beyond verdict, reason
// and seconds.
type StageFormat struct {
	// Score is what the stage's score measures; NoScore writes none.
	Score ScoreKind
	// Evidence: the manifest has <stage>_runs, _passes, _sandbox_seconds
	// and _from_ledger columns.
	Evidence bool
	// Proof: the stage records where its positive evidence came from
	// (StageMark.Proof); the manifest's `proof` column holds it. At most
	// one stage of a layout sets it (the verifier gate).
	Proof bool
}

// ProofStage is the stage of the layout that records a proof, "" when
// none does.
func (l Layout) ProofStage(stages []string) string {
	for _, s := range stages {
		if l[s].Proof {
			return s
		}
	}
	return ""
}

// Layout is the formats of the stages of a run directory, by stage name.
// A stage it lacks has only verdict, reason and seconds.
type Layout map[string]StageFormat
