package main

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/otcurate/otcurate/trial"
)

// TestVerifierSandboxFlag: --verifier-sandbox separate runs the verifier
// in a second sandbox (on the fake backend), and an unknown mode is a
// usage error.
func TestVerifierSandboxFlag(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the fake backend needs root")
	}
	task := "../../testdata/harbor-examples/hello-workdir"
	if _, code := run(t, "run", task, "--sandbox", "fake", "--verifier-sandbox", "both"); code != exitUsage {
		t.Errorf("--verifier-sandbox both: exit %d, want %d", code, exitUsage)
	}
	out, code := run(t, "run", task, "--sandbox", "fake", "--verifier-sandbox", "separate", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var res []trial.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Sandboxes != 2 || res[0].Reward == nil || *res[0].Reward != 1 {
		t.Errorf("results %+v: want reward 1 from two sandboxes", res)
	}
}
