package filters

import (
	"testing"

	"github.com/otcurate/otcurate/trial"
)

// TestFingerprintsKeyTheVerifierMode: the sandbox stages' ledger keys
// differ between the verifier modes (a cached verdict of one is never
// reused for the other) and the shared mode keeps the keys it had.
func TestFingerprintsKeyTheVerifierMode(t *testing.T) {
	shared := &trial.Runner{VerifierSandbox: trial.VerifierShared}
	separate := &trial.Runner{VerifierSandbox: trial.VerifierSeparate}
	stages := []struct {
		name string
		fp   func(*trial.Runner) string
	}{
		{"flaky", func(r *trial.Runner) string { return Flaky{Runner: r}.Fingerprint() }},
		{"cheat", func(r *trial.Runner) string { return Cheat{Runner: r}.Fingerprint() }},
		{"difficulty", func(r *trial.Runner) string { return Difficulty{Runner: r}.Fingerprint() }},
	}
	for _, s := range stages {
		if s.fp(shared) != s.fp(nil) || s.fp(shared) != s.fp(&trial.Runner{}) {
			t.Errorf("%s: the shared mode changed the key: %q vs %q", s.name, s.fp(shared), s.fp(nil))
		}
		if s.fp(separate) == s.fp(shared) {
			t.Errorf("%s: both modes key as %q", s.name, s.fp(shared))
		}
	}
}
