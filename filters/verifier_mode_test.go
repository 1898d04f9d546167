package filters

import (
	"strings"
	"testing"

	"github.com/otcurate/otcurate/trial"
)

// TestFingerprintsKeyTheVerifierMode: the sandbox stages' ledger keys
// differ between the verifier modes (a cached verdict of one is never
// reused for another), the default is fresh, and every mode is named in
// the key (verdicts of the shared mode, weaker, say so).
func TestFingerprintsKeyTheVerifierMode(t *testing.T) {
	shared := &trial.Runner{VerifierSandbox: trial.VerifierShared}
	separate := &trial.Runner{VerifierSandbox: trial.VerifierSeparate}
	fresh := &trial.Runner{VerifierSandbox: trial.VerifierFresh}
	stages := []struct {
		name string
		fp   func(*trial.Runner) string
	}{
		{"flaky", func(r *trial.Runner) string { return Flaky{Runner: r}.Fingerprint() }},
		{"cheat", func(r *trial.Runner) string { return Cheat{Runner: r}.Fingerprint() }},
		{"difficulty", func(r *trial.Runner) string { return Difficulty{Runner: r}.Fingerprint() }},
	}
	for _, s := range stages {
		if s.fp(fresh) != s.fp(nil) || s.fp(fresh) != s.fp(&trial.Runner{}) {
			t.Errorf("%s: the default is not keyed as fresh: %q vs %q", s.name, s.fp(fresh), s.fp(nil))
		}
		if !strings.Contains(s.fp(shared), "verifier-sandbox=shared") {
			t.Errorf("%s: the shared mode is not named in its key %q", s.name, s.fp(shared))
		}
		if s.fp(separate) == s.fp(shared) || s.fp(fresh) == s.fp(shared) || s.fp(fresh) == s.fp(separate) {
			t.Errorf("%s: two modes key alike: %q %q %q", s.name, s.fp(shared), s.fp(separate), s.fp(fresh))
		}
	}
}
