package trial_test

import (
	"context"
	"sync"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// networkBackend records whether each sandbox was started with the
// network.
type networkBackend struct {
	sandbox.Backend
	mu  sync.Mutex
	got []bool
}

func (b *networkBackend) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	b.mu.Lock()
	b.got = append(b.got, spec.Network)
	b.mu.Unlock()
	return b.Backend.Start(ctx, spec)
}

// TestRunnerAllowNetwork: a runner's AllowNetwork (build --allow-network)
// gives a run the network its task allows and no more; without it every
// sandbox is offline; the setting is part of the ledger key.
func TestRunnerAllowNetwork(t *testing.T) {
	sandboxtest.Parallel(t)
	d, runID := sandboxtest.Backend(t, "test-trial-network-")
	public := synthetic(t, "net-public", quickToml, "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n", "")
	closed := synthetic(t, "net-none", quickToml+"[environment]\nnetwork_mode = \"no-network\"\n", "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n", "")
	for _, c := range []struct {
		allow bool
		task  *trial.Task
		want  bool
	}{
		{false, public, false},
		{true, public, true},
		{true, closed, false},
	} {
		b := &networkBackend{Backend: d}
		r := &trial.Runner{Backend: b, AllowNetwork: c.allow}
		res, err := r.Run(context.Background(), c.task, trial.Options{Agent: trial.Nop, Labels: map[string]string{sandbox.LabelRun: runID}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].Outcome != trial.Scored {
			t.Fatalf("allow %v, %s: %+v", c.allow, c.task.Path, res)
		}
		if len(b.got) != 1 || b.got[0] != c.want {
			t.Errorf("allow %v, %s: sandboxes started with network %v, want [%v]", c.allow, c.task.Path, b.got, c.want)
		}
	}
	if k := (&trial.Runner{AllowNetwork: true}).SettingsKey(); k != " network=allowed" {
		t.Errorf("settings key with the network: %q", k)
	}
	if k := (&trial.Runner{}).SettingsKey(); k != "" {
		t.Errorf("settings key offline: %q (earlier ledgers would be invalidated)", k)
	}
}
