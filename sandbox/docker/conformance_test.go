package docker_test

import (
	"context"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/conformance"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
)

// TestDockerConformance holds the Docker backend to the contract. Each
// backend of the suite runs under a run id of its own; at cleanup the
// images it built are removed with it, and sandboxtest fails the test if a
// container is left.
func TestDockerConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	conformance.Run(t, conformance.Harness{
		Backend: func(t *testing.T) (sandbox.Backend, string) {
			d, runID := sandboxtest.Engine(t, "test-conformance-")
			// Cleanups run last first: check for leftovers before the GC.
			t.Cleanup(func() {
				ctx := context.Background()
				if left, err := d.Containers(ctx, runID); err != nil || len(left) > 0 {
					t.Errorf("run %s left containers %v (%v)", runID, left, err)
				}
				if _, err := d.GC(ctx, sandbox.GCOptions{Run: runID, Images: true}); err != nil {
					t.Errorf("removing the run's images: %v", err)
				}
			})
			return d, runID
		},
		BaseImage:     "debian:bookworm",
		HostProcesses: true,
	})
}
