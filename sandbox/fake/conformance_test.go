package fake_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/conformance"
	"github.com/otcurate/otcurate/sandbox/fake"
)

// TestFakeConformance holds the fake backend to the contract every backend
// meets (sandbox/conformance), on a state directory of its own.
func TestFakeConformance(t *testing.T) {
	dir := t.TempDir()
	conformance.Run(t, conformance.Harness{
		Backend: func(t *testing.T) (sandbox.Backend, string) {
			b := make([]byte, 6)
			rand.Read(b)
			runID := "test-conformance-" + hex.EncodeToString(b)
			f, err := fake.New(fake.Options{RunID: runID, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if left, err := f.Sandboxes(runID); err != nil || len(left) > 0 {
					t.Errorf("run %s left %v (%v)", runID, left, err)
				}
				_, _ = f.GC(context.Background(), sandbox.GCOptions{Run: runID, Images: true})
				f.Close()
			})
			return f, runID
		},
		BaseImage:     "debian:bookworm",
		HostProcesses: true,
	})
}
