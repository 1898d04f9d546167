// Package faketest gives tests of other packages a fake sandbox backend
// (package fake: real commands, no isolation) under a run id of their own,
// and checks that they leave nothing behind.
package faketest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/fake"
)

// RequireEnv makes a missing fake backend (not root) a failure instead of
// a skip.
const RequireEnv = "OTCURATE_REQUIRE_FAKE"

// Backend opens a fake backend under a fresh run id (prefix plus random
// hex) on the shared state directory (images are cached across tests and
// runs), with a private network per sandbox so parallel tests cannot
// collide on ports. Without root the test is skipped, or fails when
// RequireEnv is set. At cleanup the test fails if the run left a sandbox
// (it is then removed), and the backend is closed.
func Backend(t testing.TB, prefix string) (*fake.Backend, string) {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	runID := prefix + hex.EncodeToString(b[:])
	f, err := fake.New(fake.Options{RunID: runID, PrivateNetwork: true})
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("fake sandbox backend required: %v", err)
		}
		t.Skipf("no fake sandbox backend (set %s=1 to fail instead): %v", RequireEnv, err)
	}
	t.Cleanup(func() {
		left, err := f.Sandboxes(runID)
		if err != nil {
			t.Errorf("listing sandboxes: %v", err)
		}
		if len(left) > 0 {
			t.Errorf("run %s left %d sandboxes: %v", runID, len(left), left)
			f.GC(context.Background(), sandbox.GCOptions{Run: runID})
		}
		if err := f.Close(); err != nil {
			t.Errorf("closing the fake backend: %v", err)
		}
	})
	return f, runID
}
