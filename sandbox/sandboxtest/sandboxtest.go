// Package sandboxtest gives tests of other packages a real Docker engine
// under a run id of their own, and checks that they leave nothing behind.
package sandboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/docker"
)

// RequireEnv makes a missing engine a failure instead of a skip (CI sets it).
const RequireEnv = "OTCURATE_REQUIRE_DOCKER"

// Engine connects to the local engine under a fresh run id (prefix plus
// random hex). Without an engine the test is skipped, or fails when
// RequireEnv is set. At cleanup the test fails if the run left a
// container (they are then removed), and the backend is closed.
func Engine(t testing.TB, prefix string) (*docker.Engine, string) {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	runID := prefix + hex.EncodeToString(b[:])
	d, err := docker.New(context.Background(), docker.Options{RunID: runID})
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("Docker required: %v", err)
		}
		t.Skipf("no Docker engine (set %s=1 to fail instead): %v", RequireEnv, err)
	}
	t.Cleanup(func() {
		left, err := d.Containers(context.Background(), runID)
		if err != nil {
			t.Errorf("listing containers: %v", err)
		}
		if len(left) > 0 {
			t.Errorf("run %s left %d containers: %v", runID, len(left), left)
			d.GC(context.Background(), sandbox.GCOptions{Run: runID})
		}
		d.Close()
	})
	return d, runID
}
