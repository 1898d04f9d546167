package trial_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
		// The agent's sandbox and the fresh verifier sandbox.
		if len(b.got) != 2 || b.got[0] != c.want || b.got[1] != c.want {
			t.Errorf("allow %v, %s: sandboxes started with network %v, want [%v %v]", c.allow, c.task.Path, b.got, c.want, c.want)
		}
	}
	if k := (&trial.Runner{AllowNetwork: true}).SettingsKey(); k != " verifier-sandbox=fresh network=allowed" {
		t.Errorf("settings key with the network: %q", k)
	}
	if k := (&trial.Runner{}).SettingsKey(); k != " verifier-sandbox=fresh" {
		t.Errorf("settings key offline: %q", k)
	}
}

// templateTest is a verifier written as Harbor's template writes them: it
// fetches an installer, sources the environment file the installer puts
// in the home directory, then checks the answer: 1 only for 42.
const templateTest = `#!/bin/bash
curl -LsSf --max-time 5 https://astral.sh/uv/install.sh 2>/dev/null | sh >/dev/null 2>&1
source "$HOME/.local/bin/env" 2>/dev/null
out=$(cat /app/answer 2>/dev/null)
echo "answer: $out"
if [ "$out" = 42 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`

// TestAllowNetworkTemplateVerifierAttack: with --allow-network (the
// runner's AllowNetwork) a task allowing the network gets it, in the
// agent's sandbox and in the verifier's. An agent that makes the
// installer's host resolve to nowhere and leaves its own environment file
// where the template verifier sources it forges the reward in the shared
// mode (the documented gap: the verifier runs where the agent did); the
// separate mode carries neither /etc nor home dot-directories, and scores
// it 0. The right answer scores 1 there, so the verifier works.
func TestAllowNetworkTemplateVerifierAttack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the verifier is isolated from the host side only when this process is root on the engine's host")
	}
	d, runID := sandboxtest.Engine(t, "test-trial-netattack-")
	nb := &networkBackend{Backend: d}
	r := &trial.Runner{Backend: nb, AllowNetwork: true}
	attack := wrong + "echo '127.0.0.1 astral.sh' >> /etc/hosts\n" +
		"mkdir -p /root/.local/bin && printf 'echo 1 > /logs/verifier/reward.txt; exit 0\\n' > /root/.local/bin/env\n"
	for _, c := range []struct {
		name, solve string
		mode        trial.VerifierSandbox
		want        float64
	}{
		{"right answer", "#!/bin/bash\nmkdir -p /app && echo 42 > /app/answer\n", trial.VerifierSeparate, 1},
		{"planted environment file", attack, trial.VerifierSeparate, 0},
	} {
		task := synthetic(t, "netattack", adversaryToml, templateTest, c.solve)
		res, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, Repeats: 1, VerifierSandbox: c.mode,
			Labels: map[string]string{sandbox.LabelRun: runID}})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range res {
			if res.Outcome != trial.Scored || res.Reward == nil || *res.Reward != c.want {
				t.Errorf("%s (%s): %s reward %v (%s), want scored %v\n%s", c.name, c.mode, res.Outcome, deref(res.Reward), res.Detail, c.want, res.Log)
			}
		}
	}
	// Every sandbox of the run (the agent's and the verifier's) had the
	// network the task allows.
	for i, got := range nb.got {
		if !got {
			t.Errorf("sandbox %d started without the network", i)
		}
	}
	// The shared mode's verdict on the same attack, logged: the gap.
	task := synthetic(t, "netattack-shared", adversaryToml, templateTest, attack)
	res, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, Repeats: 1, VerifierSandbox: trial.VerifierShared,
		Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shared mode (the documented gap): %s reward %v", res[0].Outcome, deref(res[0].Reward))
}

// TestAgentCannotReachTheModelServer: the policy's server (vLLM, tinylm)
// listens on the host's loopback, and its /v1/load_lora_adapter swaps the
// weights the trainer samples from. An agent that could reach it from its
// sandbox would steer its own training. Offline it cannot; with the
// network (Docker's bridge) its 127.0.0.1 is its own and the host's
// gateway address reaches no loopback listener. A control runs the same
// probe against a server the agent starts in its own sandbox, so a probe
// that cannot reach anything fails the test. (The fake backend shares
// this host's network when a task has the network and is not built with
// PrivateNetwork: it isolates nothing, and that case is not run there.)
func TestAgentCannotReachTheModelServer(t *testing.T) {
	sandboxtest.Parallel(t)
	d, runID := sandboxtest.Backend(t, "test-trial-modelsrv-")
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("Success: LoRA adapter loaded"))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	// Any HTTP answer counts as reached (http.server answers a POST 501).
	probe := "for h in 127.0.0.1 localhost 172.17.0.1 host.docker.internal; do\n" +
		"python3 -c \"import urllib.request,urllib.error,sys\ntry: urllib.request.urlopen('http://'+sys.argv[1]+':" + port +
		"/v1/load_lora_adapter', data=b'{}', timeout=3)\nexcept urllib.error.HTTPError: pass\" $h 2>/dev/null && echo $h >> /app/reached\ndone\ntrue\n"
	test := "#!/bin/bash\n[ -s /app/reached ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	attack := synthetic(t, "reach-model-server", quickToml, test, "#!/bin/bash\n"+probe)
	control := synthetic(t, "reach-own-server", quickToml, test,
		"#!/bin/bash\n(cd /tmp && python3 -m http.server "+port+" --bind 127.0.0.1 >/dev/null 2>&1 &)\nsleep 2\n"+probe)
	for _, allow := range []bool{false, true} {
		if allow && os.Getenv("OTCURATE_SANDBOX") != "docker" {
			continue
		}
		r := &trial.Runner{Backend: d, AllowNetwork: allow}
		for _, c := range []struct {
			task *trial.Task
			want float64
		}{{control, 1}, {attack, 0}} {
			res, err := r.Run(context.Background(), c.task, trial.Options{Agent: trial.Oracle, Labels: map[string]string{sandbox.LabelRun: runID}})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Outcome != trial.Scored || res[0].Reward == nil || *res[0].Reward != c.want {
				t.Errorf("network %v, %s: %s reward %v (%s), want %g", allow, c.task.Path, res[0].Outcome, deref(res[0].Reward), res[0].Detail, c.want)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the host's model server got %d requests from inside a sandbox", n)
	}
}
