// Package sandboxtest gives tests of other packages a sandbox backend
// under a run id of their own, and checks that they leave nothing behind.
//
// Tests come in two tiers, chosen by OTCURATE_SANDBOX (TierEnv):
//   - Backend is for tests of logic built on the sandbox contract (stages,
//     trials, the agent harness, the trainer). It gives the fake backend
//     (package sandbox/fake: fast, needs root, isolates nothing) unless
//     OTCURATE_SANDBOX=docker, which runs the same tests on the real engine.
//   - Engine is for tests of the Docker engine itself or of behaviour only a
//     real engine has. It runs when an engine answers, except in the fast
//     tier (OTCURATE_SANDBOX=fake), where it is skipped.
//
// `make test` runs both: the fast tier (OTCURATE_SANDBOX=fake, packages in
// parallel), then the engine tier (OTCURATE_SANDBOX=docker).
package sandboxtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/docker"
	"github.com/otcurate/otcurate/sandbox/fake/faketest"
)

// RequireEnv makes a missing engine a failure instead of a skip (CI sets it).
const RequireEnv = "OTCURATE_REQUIRE_DOCKER"

// TierEnv selects the test tier: "fake" (no engine; Engine tests skip),
// "docker" (Backend tests run on the real engine too), or unset (Backend
// on the fake, Engine tests where an engine answers).
const TierEnv = "OTCURATE_SANDBOX"

// Backend opens the backend for tests of logic on the sandbox contract:
// the fake backend, or the Docker engine when TierEnv is "docker". See
// Engine and faketest.Backend for the skip and leftover rules.
func Backend(t testing.TB, prefix string) (sandbox.Backend, string) {
	t.Helper()
	if os.Getenv(TierEnv) == "docker" {
		return Engine(t, prefix)
	}
	return faketest.Backend(t, prefix)
}

// Engine connects to the local engine under a fresh run id (prefix plus
// random hex). Without an engine the test is skipped, or fails when
// RequireEnv is set; in the fast tier (TierEnv "fake") it is skipped. At
// cleanup the test fails if the run left a container (they are then
// removed), and the backend is closed.
func Engine(t testing.TB, prefix string) (*docker.Engine, string) {
	t.Helper()
	if os.Getenv(TierEnv) == "fake" {
		t.Skipf("needs the Docker engine: the engine tier runs it (%s=docker)", TierEnv)
	}
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

// Parallel marks a test that runs sandboxes as parallel on the fake
// backend, where sandboxes cost milliseconds and nothing is timed against
// a shared engine; on the real engine (TierEnv "docker") the test stays
// sequential, so timing-sensitive verdicts do not compete for the cores.
func Parallel(t *testing.T) {
	t.Helper()
	if os.Getenv(TierEnv) != "docker" {
		t.Parallel()
	}
}
