package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JoinScore is the on-disk score of a measurement: whichever of seconds
// and rate is set (seconds when, wrongly, both are).
func JoinScore(seconds, rate *float64) *float64 {
	if seconds != nil {
		return seconds
	}
	return rate
}

// Split places an on-disk score in the field of its kind. A score of a
// stage that measures none is an error: the run directory and the layout
// disagree.
func (k ScoreKind) Split(score *float64) (seconds, rate *float64, err error) {
	if score == nil {
		return nil, nil, nil
	}
	switch k {
	case ScoreSeconds:
		return score, nil, nil
	case ScoreRate:
		return nil, score, nil
	}
	return nil, nil, fmt.Errorf("a score (%g) where the layout has none", *score)
}

// decisionJSON is a Decision as decisions.jsonl holds it: one score.
type decisionJSON struct {
	Index    int64     `json:"index"`
	Path     string    `json:"path"`
	Stage    string    `json:"stage"`
	Verdict  Verdict   `json:"verdict"`
	Reason   string    `json:"reason"`
	Detail   string    `json:"detail,omitempty"`
	Hash     string    `json:"hash,omitempty"`
	Flags    []string  `json:"flags,omitempty"`
	Score    *float64  `json:"score,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
	Proof    string    `json:"proof,omitempty"`
}

func (d *Decision) wire() decisionJSON {
	return decisionJSON{Index: d.Index, Path: d.Path, Stage: d.Stage, Verdict: d.Verdict, Reason: d.Reason, Detail: d.Detail,
		Hash: d.Hash, Flags: d.Flags, Score: JoinScore(d.ScoreSeconds, d.ScoreRate), Evidence: d.Evidence, Proof: d.Proof}
}

// decision reads a line's score with the layout (none with a nil layout).
func (w *decisionJSON) decision(layout Layout) (Decision, error) {
	d := Decision{Index: w.Index, Path: w.Path, Stage: w.Stage, Verdict: w.Verdict, Reason: w.Reason, Detail: w.Detail,
		Hash: w.Hash, Flags: w.Flags, Evidence: w.Evidence, Proof: w.Proof}
	if layout == nil {
		return d, nil
	}
	var err error
	if d.ScoreSeconds, d.ScoreRate, err = layout[w.Stage].Score.Split(w.Score); err != nil {
		return d, fmt.Errorf("stage %s: %w", w.Stage, err)
	}
	return d, nil
}

// MarshalJSON writes the decision as a line of decisions.jsonl (without
// the newline): its score, seconds or rate, as `score`.
func (d Decision) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the caller's encoder escapes, or not
	if err := enc.Encode(d.wire()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
