package kube_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/helper"
	"github.com/otcurate/otcurate/trial"
	"github.com/otcurate/otcurate/trial/trialtest"
)

// helpers holds the sandbox helper for this machine's architecture (the
// test cluster's single node), built by TestMain.
var helpers map[string]*helper.Binary

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kube-helper-")
	if err != nil {
		panic(err)
	}
	cmd := exec.Command("go", "build", "-ldflags", "-s -w", "-o", filepath.Join(dir, helper.FileName(runtime.GOARCH)),
		"github.com/otcurate/otcurate/cmd/otcurate-sandbox-helper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		panic(string(out))
	}
	bin, err := helper.Find(dir, runtime.GOARCH)
	if err != nil {
		panic(err)
	}
	helpers = map[string]*helper.Binary{runtime.GOARCH: bin}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Attacks on how the result is read (see trial's adversarial suite):
// solve.sh leaves the wrong answer (41) and replaces the image's tools or
// leaves processes behind.
const (
	advToml = "[verifier]\ntimeout_sec = 8\n[agent]\ntimeout_sec = 30\n[environment]\ncpus = 1\nmemory_mb = 512\n"
	advTest = `#!/bin/bash
out=$(cat /app/answer 2>/dev/null)
if [ "$out" = 42 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
`
	advWrong = "#!/bin/bash\nmkdir -p /app && echo 41 > /app/answer\n"
)

// fakeTool replaces NAME in /usr/local/bin, /usr/bin and /bin.
func fakeTool(name, body string) string {
	return "for d in /usr/local/bin /usr/bin /bin; do [ -L $d ] && continue; printf '%s\\n' '#!/bin/sh' " + sandbox.ShellQuote(body) +
		" > $d/" + name + ".new && chmod 755 $d/" + name + ".new && mv -f $d/" + name + ".new $d/" + name + "; done\n"
}

// TestKubeAdversarialTools: with the sandbox helper, an agent that
// replaced head, tail, base64, rm, tar or chmod in its image, broke the
// mkdir and install that write the helper, or left processes behind, gets no forged reward and no infrastructure outcome
// on pods. (The shell path reads the reward with head: a fake head forges
// a 1 there.)
func TestKubeAdversarialTools(t *testing.T) {
	b, runID := cluster(t)
	ctx := context.Background()
	runner := &trial.Runner{Backend: b, VerifierSandbox: trial.VerifierShared} // the fresh default needs a backend that lists changes
	cases := []struct{ name, solve string }{
		{"control: wrong answer", advWrong},
		{"fake head", advWrong + fakeTool("head", "echo 1")},
		{"fake tail, base64, rm, tar, chmod", advWrong + fakeTool("tail", "echo 1") + fakeTool("base64", "echo MQo=") +
			fakeTool("rm", "exit 0") + fakeTool("tar", "exit 0") + fakeTool("chmod", "exit 0")},
		{"background loop writes reward", advWrong +
			"setsid nohup bash -c 'while :; do echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.01; done' >/dev/null 2>&1 &\n"},
		{"continuous forker writes reward", advWrong +
			"setsid nohup bash -c 'while :; do (echo 1 > /logs/verifier/reward.txt 2>/dev/null &); done' >/dev/null 2>&1 &\n"},
		{"conftest planted in /tests", advWrong + "mkdir -p /tests && echo planted > /tests/conftest.sh\n"},
		// The helper is written by the image's mkdir and install: breaking
		// them, or having install write a program that does not answer as
		// the helper does, must score 0, not pass for an infrastructure
		// failure (which would leave the attempt unscored).
		{"failing install", advWrong + fakeTool("install", "exit 1")},
		{"mkdir and install removed", advWrong + "rm -f /usr/bin/install /bin/install /usr/bin/mkdir /bin/mkdir\n"},
		{"mkdir never returns", advWrong + fakeTool("mkdir", "exec sleep 100000")},
		{"install writes a helper that does not answer", advWrong +
			fakeTool("install", `cat >/dev/null; for a; do d=$a; done; printf '#!/bin/sh\necho 1\n' > "$d"; /bin/chmod 755 "$d"`)},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			task := trialtest.DoneTask(t, "adv", advToml, "FROM otcurate/base-bookworm:latest\nWORKDIR /app\n", advTest, tc.solve)
			res, err := runner.Run(ctx, task, trial.Options{Agent: trial.Oracle, Repeats: 1, Labels: map[string]string{sandbox.LabelRun: runID}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				t.Logf("%s: %s %s %s", tc.name, r.Outcome, reward(r), r.Detail)
				if r.Outcome != trial.Scored || r.Reward == nil || *r.Reward != 0 {
					t.Errorf("outcome %s reward %s (%s), want scored 0\n%s", r.Outcome, reward(r), r.Detail, r.Log)
				}
			}
		})
	}
}

// TestKubeVerifyCost measures the verifier-isolation calls of one
// verification (kill, two resets, an exec standing in for test.sh, kill,
// three reads) on a pod, with the helper and with the image's shell: the
// median of N runs each (OTCURATE_KUBE_COST_RUNS, default 5).
func TestKubeVerifyCost(t *testing.T) {
	n := 5
	if v := os.Getenv("OTCURATE_KUBE_COST_RUNS"); v != "" {
		fmt.Sscan(v, &n)
	}
	ctx := context.Background()
	tests := []bundle.Entry{{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(advTest)}}
	for _, mode := range []string{"shell", "helper"} {
		var hs map[string]*helper.Binary
		if mode == "helper" {
			hs = helpers
		}
		b, runID := clusterWith(t, hs)
		task := taskOf(t, "cost", "FROM otcurate/base-bookworm:latest\n", advTest, advWrong)
		img, err := b.Build(ctx, sandbox.Environment{Hash: task.Bundle.EnvHash, Task: "cost", Files: trialtest.EnvFiles(t, task)})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.Start(ctx, sandbox.StartSpec{Image: img, Labels: map[string]string{sandbox.LabelRun: runID},
			Resources: sandbox.Resources{CPUs: 1, MemoryMB: 512}})
		if err != nil {
			t.Fatal(err)
		}
		var took []time.Duration
		for i := 0; i < n; i++ {
			t0 := time.Now()
			must := func(err error) {
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
			}
			must(sb.KillAll(ctx))
			must(sb.ResetDir(ctx, "/logs/verifier", 0o777, nil))
			must(sb.ResetDir(ctx, "/tests", 0o755, tests))
			_, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "echo 0 > /logs/verifier/reward.txt", User: "root"})
			must(err)
			must(sb.KillAll(ctx))
			for _, p := range []string{"/logs/verifier/reward.txt", "/logs/verifier/reward.json", "/logs/verifier/test-stdout.txt"} {
				if _, err := sb.ReadFile(ctx, p, 1<<10, false); err != nil && !strings.Contains(err.Error(), "not found") {
					must(err)
				}
			}
			took = append(took, time.Since(t0))
		}
		sb.Stop(ctx)
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		t.Logf("%s: median %v over %d verifications (min %v, max %v)", mode, took[n/2], n, took[0], took[n-1])
	}
}

// reward prints a result's reward, "none" when it has none.
func reward(r trial.Result) string {
	if r.Reward == nil {
		return "none"
	}
	return fmt.Sprint(*r.Reward)
}

// TestKubeImageWithoutInstall: an image that cannot take the helper (no
// install, as in some minimal images) uses the image's shell for that
// sandbox, says so on every result, and scores its oracle as usual: an
// image's gap is never read as tampering.
func TestKubeImageWithoutInstall(t *testing.T) {
	b, runID := cluster(t)
	runner := &trial.Runner{Backend: b, VerifierSandbox: trial.VerifierShared} // the fresh default needs a backend that lists changes
	task := trialtest.DoneTask(t, "noinstall", advToml, "FROM otcurate/base-bookworm:latest\nRUN rm -f /usr/bin/install /bin/install\nWORKDIR /app\n",
		advTest, "#!/bin/bash\nmkdir -p /app && echo 42 > /app/answer\n")
	res, err := runner.Run(context.Background(), task, trial.Options{Agent: trial.Oracle, Repeats: 1, Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != trial.Scored || r.Reward == nil || *r.Reward != 1 {
			t.Errorf("outcome %s reward %s (%s), want scored 1\n%s", r.Outcome, reward(r), r.Detail, r.Log)
		}
		if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "could not run in this image") }) {
			t.Errorf("warnings %q do not say the helper could not run", r.Warnings)
		}
	}
}
