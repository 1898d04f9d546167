package trial_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
	"github.com/otcurate/otcurate/trial/trialtest"
)

// separateDockerfile has files the agent deletes and system paths it
// tampers with.
const separateDockerfile = "FROM debian:bookworm\nWORKDIR /app\nRUN mkdir -p /app/old-tree/sub && echo old > /app/old && echo old > /app/old-tree/sub/f && echo keep > /app/kept\n"

// honestWork creates, deletes and links in the workdir, gives a file to
// uid 1000, and changes system paths and a home dot-directory, which
// must not be carried.
const honestWork = `#!/bin/bash
set -e
echo 42 > /app/answer
mkdir -p /app/sub/deep && printf 'x\n' > /app/sub/deep/file && chmod 640 /app/sub/deep/file
ln -s answer /app/link
ln -s /etc/passwd /app/abs-link
rm /app/old && rm -r /app/old-tree
echo mine > /app/owned && chown 1000:1000 /app/owned
mkdir -p /root/notes && echo n > /root/notes/n.txt
mkdir -p /root/.local/bin && echo planted > /root/.local/bin/planted
echo planted > /usr/local/bin/planted && echo planted > /etc/planted
mkdir -p /opt/planted && mkfifo /app/fifo
`

// separateTest checks, in the verifier's sandbox, that the work arrived
// and nothing else did: reward 1 only when all of it holds.
const separateTest = `#!/bin/bash
fail() { echo "FAIL: $*"; echo 0 > /logs/verifier/reward.txt; exit 0; }
[ "$(cat /app/answer)" = 42 ] || fail answer
[ "$(cat /app/sub/deep/file)" = x ] || fail deep file
[ "$(stat -c %a /app/sub/deep/file)" = 640 ] || fail mode $(stat -c %a /app/sub/deep/file)
[ -L /app/link ] && [ "$(readlink /app/link)" = answer ] || fail link
[ -L /app/abs-link ] && [ "$(readlink /app/abs-link)" = /etc/passwd ] || fail abs link
[ ! -e /app/old ] && [ ! -e /app/old-tree ] || fail deletions
[ "$(cat /app/kept)" = keep ] || fail kept
[ "$(stat -c %u:%g /app/owned)" = 1000:1000 ] || fail owner $(stat -c %u:%g /app/owned)
[ "$(cat /root/notes/n.txt)" = n ] || fail home file
if [ "$SEPARATE" = 1 ]; then
  for p in /root/.local/bin/planted /usr/local/bin/planted /etc/planted /opt/planted /app/fifo; do
    [ -e "$p" ] && fail "$p was carried"
  done
fi
echo 1 > /logs/verifier/reward.txt
`

func runMode(t *testing.T, b sandbox.Backend, runID string, task *trial.Task, mode trial.VerifierSandbox, repeats int) []trial.Result {
	t.Helper()
	r := &trial.Runner{Backend: b}
	res, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, Repeats: repeats, VerifierSandbox: mode,
		Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != repeats {
		t.Fatalf("%d results for %d repeats", len(res), repeats)
	}
	for _, r := range res {
		t.Logf("%s %s: %s reward=%v detail=%q warnings=%q durations=%+v", mode, r.Agent, r.Outcome, deref(r.Reward), r.Detail, r.Warnings, r.Durations)
	}
	return res
}

// TestSeparateCarriesWork: an honest agent's work (files created, changed
// and deleted in the workdir, symlinks, modes, owners, a home directory)
// reaches the separate verifier sandbox and scores 1; system paths, home
// dot-directories and special files it changed do not.
func TestSeparateCarriesWork(t *testing.T) {
	b, runID := engine(t)
	files := map[string]string{
		"instruction.md":         "Do the thing.\n",
		"task.toml":              "[verifier]\ntimeout_sec = 30\n[verifier.env]\nSEPARATE = \"1\"\n",
		"environment/Dockerfile": separateDockerfile,
		"tests/test.sh":          separateTest,
		"solution/solve.sh":      honestWork,
	}
	task := trialtest.Task(t, "separate-work", files)
	b.starts.Store(0)
	res := runMode(t, b, runID, task, trial.VerifierSeparate, 2)
	wantReward(t, res, 1)
	if res[0].Sandboxes != 2 || b.starts.Load() != 2 {
		t.Errorf("sandboxes %d, starts %d: want the agent's and one verifier sandbox for both repeats", res[0].Sandboxes, b.starts.Load())
	}
	if !strings.Contains(strings.Join(res[0].Warnings, " "), "not carried") {
		t.Errorf("warnings %q: want the FIFO reported as not carried", res[0].Warnings)
	}
	// The same checks in the shared sandbox, without the "nothing else
	// carried" ones: the agent's state is there as it left it.
	files["task.toml"] = "[verifier]\ntimeout_sec = 30\n"
	wantReward(t, runMode(t, b, runID, trialtest.Task(t, "separate-work-shared", files), trial.VerifierShared, 1), 1)
}

// replacedGrep is an agent with the wrong answer that replaces grep, the
// tool test.sh checks the answer with, in a system path and in front of
// it in PATH: each writes reward 1.
const replacedGrep = `#!/bin/bash
mkdir -p /app && echo 41 > /app/answer
fake='#!/bin/sh
echo 1 > /logs/verifier/reward.txt; exit 0'
for p in /usr/local/bin/grep /usr/bin/grep; do printf '%s\n' "$fake" > "$p.new" && chmod 755 "$p.new" && mv -f "$p.new" "$p"; done
`

const grepTest = `#!/bin/bash
if grep -qx 42 /app/answer; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`

// TestSeparateDefeatsReplacedTools: the gap of the shared mode closed by
// the separate one. In the shared sandbox the replaced grep runs and
// forges reward 1 (documented; asserted so the gap stays visible); in the
// separate one the image's grep runs and the wrong answer scores 0.
func TestSeparateDefeatsReplacedTools(t *testing.T) {
	b, runID := engine(t)
	task := synthetic(t, "separate-grep", "[verifier]\ntimeout_sec = 30\n", grepTest, replacedGrep)
	shared := runMode(t, b, runID, task, trial.VerifierShared, 1)
	if r := shared[0]; r.Outcome != trial.Scored || r.Reward == nil || *r.Reward != 1 {
		t.Logf("shared mode no longer forged by a replaced grep: %s %v (the documented gap may be closed)", r.Outcome, deref(r.Reward))
	}
	wantReward(t, runMode(t, b, runID, task, trial.VerifierSeparate, 2), 0)
}

// TestSeparateUnsupported: a backend whose sandboxes cannot collect work
// fails Run at once, never a task outcome or a retried infra error.
func TestSeparateUnsupported(t *testing.T) {
	b, runID := engine(t)
	task := synthetic(t, "separate-unsupported", "", "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n", "#!/bin/bash\ntrue\n")
	r := &trial.Runner{Backend: noWork{b}}
	_, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, VerifierSandbox: trial.VerifierSeparate,
		InfraRetries: 3, Labels: map[string]string{sandbox.LabelRun: runID}})
	if !errors.Is(err, sandbox.ErrWorkUnsupported) {
		t.Fatalf("err %v, want ErrWorkUnsupported", err)
	}
	if _, err := trial.ParseVerifierSandbox("both"); err == nil {
		t.Error("ParseVerifierSandbox accepted \"both\"")
	}
}

// noWork hides its sandboxes' WorkCollector, like the Kubernetes and
// Daytona backends.
type noWork struct{ sandbox.Backend }

func (n noWork) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	sb, err := n.Backend.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	return struct{ sandbox.Sandbox }{sb}, nil
}

// BenchmarkVerifierSandbox measures one whole oracle run (build cached,
// start, solve, verify once, teardown) of a small task in each verifier
// mode, on the test tier's backend (OTCURATE_SANDBOX=docker for the
// engine). It reports the median run and carry (collect the work, start
// the verifier sandbox, apply the work) in seconds. Run with e.g.
// -bench VerifierSandbox -benchtime 15x.
func BenchmarkVerifierSandbox(b *testing.B) {
	be, runID := sandboxtest.Backend(b, "bench-verifier-")
	task := trialtest.Task(b, "bench-verifier", map[string]string{
		"instruction.md":         "Do the thing.\n",
		"task.toml":              "[verifier]\ntimeout_sec = 30\n",
		"environment/Dockerfile": "FROM debian:bookworm\nWORKDIR /app\nRUN echo old > /app/old\n",
		"tests/test.sh":          "#!/bin/bash\n[ \"$(cat /app/answer)\" = 42 ] && [ ! -e /app/old ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
		"solution/solve.sh":      "#!/bin/bash\necho 42 > /app/answer && rm /app/old && mkdir -p /app/src && for i in $(seq 1 50); do echo $i > /app/src/f$i; done\n",
	})
	r := &trial.Runner{Backend: be}
	for _, c := range []struct {
		mode    trial.VerifierSandbox
		repeats int
	}{{trial.VerifierShared, 1}, {trial.VerifierFresh, 1}, {trial.VerifierSeparate, 1}, {trial.VerifierShared, 5}, {trial.VerifierFresh, 5}} {
		mode := c.mode
		b.Run(fmt.Sprintf("%s-x%d", mode, c.repeats), func(b *testing.B) {
			var runs, carries []float64
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				res, err := r.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, Repeats: c.repeats, VerifierSandbox: mode,
					Labels: map[string]string{sandbox.LabelRun: runID}})
				if err != nil {
					b.Fatal(err)
				}
				if res[0].Outcome != trial.Scored || res[0].Reward == nil || *res[0].Reward != 1 {
					b.Fatalf("%s: %s %v (%s)", mode, res[0].Outcome, deref(res[0].Reward), res[0].Detail)
				}
				runs = append(runs, time.Since(t0).Seconds())
				carries = append(carries, res[0].Durations.Carry)
			}
			b.ReportMetric(median(runs), "run-s")
			b.ReportMetric(median(runs)/float64(c.repeats), "per-verification-s")
			b.ReportMetric(median(carries), "carry-s")
		})
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
