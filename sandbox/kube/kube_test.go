package kube_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/conformance"
	"github.com/otcurate/otcurate/sandbox/helper"
	"github.com/otcurate/otcurate/sandbox/kube"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
	"github.com/otcurate/otcurate/trial/trialtest"
)

// RequireEnv makes a missing cluster a failure (make test-kube sets it).
const RequireEnv = "OTCURATE_REQUIRE_KUBE"

// cluster connects to the test cluster of scripts/kube.sh (its `env`
// prints the variables) under a fresh run id, and checks at cleanup that
// the run left no pod.
func cluster(t *testing.T) (*kube.Backend, string) {
	t.Helper()
	return clusterWith(t, helpers)
}

// clusterWith is cluster with the given sandbox helpers (none: the
// image's shell).
func clusterWith(t *testing.T, helpers map[string]*helper.Binary) (*kube.Backend, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs pods")
	}
	cfg, sock := os.Getenv("OTCURATE_KUBECONFIG"), os.Getenv("OTCURATE_KUBE_CONTAINERD")
	if cfg == "" || sock == "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatal("a cluster is required: set OTCURATE_KUBECONFIG and OTCURATE_KUBE_CONTAINERD (scripts/kube.sh env)")
		}
		t.Skip("no cluster (scripts/kube.sh up; then the variables of scripts/kube.sh env)")
	}
	engine, runID := sandboxtest.Engine(t, "test-kube-")
	b, err := kube.New(context.Background(), kube.Options{Kubeconfig: cfg, RunID: runID, Builder: engine,
		Loader: kube.Containerd{Address: sock}, RequestRatio: 0.1, StartTimeout: 2 * time.Minute, Helpers: helpers,
		HelperTimeout: 20 * time.Second}) // the adversary whose mkdir never returns waits for it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rep, err := b.GC(context.Background(), sandbox.GCOptions{Run: runID})
		if err != nil {
			t.Errorf("gc: %v", err)
		}
		if len(rep.Containers) > 0 {
			t.Errorf("run %s left pods: %v", runID, rep.Containers)
		}
	})
	return b, runID
}

func taskOf(t *testing.T, name, dockerfile, test, solve string) *trial.Task {
	return trialtest.DoneTask(t, name, "[verifier]\ntimeout_sec = 60\n[environment]\ncpus = 1\nmemory_mb = 512\n", dockerfile, test, solve)
}

const (
	goodDocker = "FROM otcurate/base-bookworm:latest\nWORKDIR /app\n"
	goodTest   = "#!/bin/bash\n[ \"$(cat /app/done 2>/dev/null)\" = \"$(cat /tests/expected.txt)\" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	goodSolve  = "#!/bin/bash\necho done > /app/done\n"
)

// TestKubeVerifierContract runs the Harbor verifier contract on pods: the
// oracle scores 1, nop 0, a failing Dockerfile is a build defect, and a
// verifier that writes no reward is a verifier defect, exactly as on Docker.
func TestKubeVerifierContract(t *testing.T) {
	b, runID := cluster(t)
	ctx := context.Background()
	runner := &trial.Runner{Backend: b, VerifierSandbox: trial.VerifierShared} // the fresh default needs a backend that lists changes
	labels := map[string]string{sandbox.LabelRun: runID}
	good := taskOf(t, "good", goodDocker, goodTest, goodSolve)
	res, err := runner.Run(ctx, good, trial.Options{Agent: trial.Oracle, Repeats: 2, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != trial.Scored || *r.Reward != 1 {
			t.Errorf("oracle: %s %v (%s; log %q)", r.Outcome, r.Reward, r.Detail, r.Log)
		}
	}
	res, err = runner.Run(ctx, good, trial.Options{Agent: trial.Nop, Repeats: 1, Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Outcome != trial.Scored || *r.Reward != 0 || !r.ImageCached {
		t.Errorf("nop: %s %v cached=%v (%s)", r.Outcome, r.Reward, r.ImageCached, r.Detail)
	}
	for _, c := range []struct {
		name, docker, test string
		want               trial.Outcome
	}{
		{"bad-build", goodDocker + "RUN exit 3\n", goodTest, trial.BuildFailed},
		{"no-reward", goodDocker, "#!/bin/bash\necho checked\n", trial.RewardMissing},
	} {
		task := taskOf(t, c.name, c.docker, c.test, goodSolve)
		res, err := runner.Run(ctx, task, trial.Options{Agent: trial.Oracle, Repeats: 1, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		if r := res[0]; r.Outcome != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, r.Outcome, r.Detail, c.want)
		}
	}
}

// TestKubeSandbox checks exec (streams, exit codes, env, user, workdir,
// output cap, a timeout that kills the whole command), files, the log
// directories, limits, stop and the janitor on a pod.
func TestKubeSandbox(t *testing.T) {
	b, runID := cluster(t)
	ctx := context.Background()
	good := taskOf(t, "sandbox", goodDocker, goodTest, goodSolve)
	img, err := b.Build(ctx, sandbox.Environment{Hash: good.Bundle.EnvHash, Files: trialtest.EnvFiles(t, good), Task: "sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img, Workdir: "/app", Env: map[string]string{"FROM_SPEC": "yes"},
		Resources: sandbox.Resources{CPUs: 0.5, MemoryMB: 256}, Labels: map[string]string{sandbox.LabelTask: "a/task with spaces"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop(ctx)

	r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: `echo "$GREETING from $(pwd) as $(id -un) $FROM_SPEC"; echo oops >&2; exit 7`,
		Env: map[string]string{"GREETING": "it's a \"quoted\" value"}, User: "nobody"})
	if err != nil || string(r.Stdout) != "it's a \"quoted\" value from /app as nobody yes\n" || string(r.Stderr) != "oops\n" || r.ExitCode != 7 {
		t.Errorf("exec: %q %q exit %d, %v", r.Stdout, r.Stderr, r.ExitCode, err)
	}
	r, err = sb.Exec(ctx, sandbox.ExecRequest{Cmd: "pwd; id -u", Workdir: "/tmp", User: "65534:65534"})
	if err != nil || string(r.Stdout) != "/tmp\n65534\n" {
		t.Errorf("numeric user and workdir: %q %q, %v", r.Stdout, r.Stderr, err)
	}
	r, err = sb.Exec(ctx, sandbox.ExecRequest{Cmd: "head -c 100000 /dev/zero | tr '\\0' x", MaxOutput: 1000})
	if err != nil || !r.Truncated || len(r.Stdout) > 1100 {
		t.Errorf("output cap: %d bytes truncated=%v, %v", len(r.Stdout), r.Truncated, err)
	}
	// A timeout kills the command and what it started in the background.
	start := time.Now()
	r, err = sb.Exec(ctx, sandbox.ExecRequest{Cmd: "(sleep 300 &) ; sleep 300", Timeout: 2 * time.Second})
	if err != nil || !r.TimedOut || time.Since(start) > 20*time.Second {
		t.Errorf("timeout: %+v after %s, %v", r, time.Since(start), err)
	}
	if r, _ := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "pgrep -c -x sleep || true"}); strings.TrimSpace(string(r.Stdout)) != "1" {
		t.Errorf("after the timeout: %q sleep processes, want only the sandbox's own", r.Stdout) // sleep infinity
	}
	// Files: modes kept, owner root; a missing file; the log dirs.
	err = sb.Upload(ctx, "/tests", []bundle.Entry{
		{Name: "run.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("#!/bin/sh\necho ran\n")},
		{Name: "sub/data.txt", Kind: bundle.KindFile, Mode: 0o600, Data: []byte("payload")},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, _ = sb.Exec(ctx, sandbox.ExecRequest{Cmd: "/tests/run.sh && stat -c '%a %U' /tests/run.sh /tests/sub/data.txt /logs/verifier /logs/agent"})
	if want := "ran\n755 root\n600 root\n777 root\n777 root\n"; string(r.Stdout) != want {
		t.Errorf("upload and log dirs: %q %q, want %q", r.Stdout, r.Stderr, want)
	}
	if data, err := sb.Download(ctx, "/tests/sub/data.txt", 4); err != nil || string(data) != "payl" {
		t.Errorf("download: %q, %v", data, err)
	}
	if _, err := sb.Download(ctx, "/nonexistent", 10); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("download of a missing file: %v", err)
	}
	// Limits reach the container's cgroup.
	r, _ = sb.Exec(ctx, sandbox.ExecRequest{Cmd: "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max"})
	if got := strings.TrimSpace(string(r.Stdout)); got != fmt.Sprint(256<<20) {
		t.Errorf("memory limit %q, want %d", got, 256<<20)
	}
	// A terminal: keystrokes in, screen out.
	term, err := sb.OpenTerminal(ctx, sandbox.TerminalSpec{})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(term, "echo $((6*7))x\nexit\n")
	screen, _ := io.ReadAll(io.LimitReader(term, 1<<16))
	term.Close()
	if !strings.Contains(string(screen), "42x") {
		t.Errorf("terminal screen %q lacks 42x", screen)
	}
	// The janitor finds the running pod by its run.
	rep, err := b.GC(ctx, sandbox.GCOptions{Run: runID, ExceptRun: "other"})
	if err != nil || len(rep.Containers) != 1 || rep.Containers[0] != sb.ID() {
		t.Errorf("gc: %v, %v; want [%s]", rep.Containers, err, sb.ID())
	}
	if err := sb.Stop(ctx); err != nil {
		t.Errorf("stop after gc: %v", err)
	}
}

// TestKubeStartFailures: an entrypoint that exits is the task's defect
// (as on Docker); an image the node does not have is infrastructure.
func TestKubeStartFailures(t *testing.T) {
	b, _ := cluster(t)
	ctx := context.Background()
	dying := taskOf(t, "dying", goodDocker+"ENTRYPOINT [\"/bin/false\"]\n", goodTest, goodSolve)
	img, err := b.Build(ctx, sandbox.Environment{Hash: dying.Bundle.EnvHash, Files: trialtest.EnvFiles(t, dying)})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img})
	var he *sandbox.HealthcheckError
	if !errors.As(err, &he) || !he.Exited {
		if sb != nil {
			sb.Stop(ctx)
		}
		t.Errorf("dying entrypoint: %v, want an exited *HealthcheckError", err)
	}
	sb, err = b.Start(ctx, sandbox.StartSpec{Image: sandbox.Image{Ref: "otcurate-env:never-loaded"}})
	if !sandbox.IsInfra(err) {
		if sb != nil {
			sb.Stop(ctx)
		}
		t.Errorf("image missing on the node: %v, want an infrastructure error", err)
	}
	// A pod no node can take (a request far beyond the node) is a capacity
	// problem: infrastructure, after the start timeout, and deleted.
	engine, bigRun := sandboxtest.Engine(t, "test-kube-big-")
	big, err := kube.New(ctx, kube.Options{Kubeconfig: os.Getenv("OTCURATE_KUBECONFIG"), RunID: bigRun,
		Builder: engine, Loader: kube.Containerd{Address: os.Getenv("OTCURATE_KUBE_CONTAINERD")}, StartTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sb, err = big.Start(ctx, sandbox.StartSpec{Image: img, Resources: sandbox.Resources{CPUs: 512}})
	var ie *sandbox.InfraError
	if !errors.As(err, &ie) || ie.Kind != "start_timeout" || !strings.Contains(err.Error(), "not scheduled") {
		if sb != nil {
			sb.Stop(ctx)
		}
		t.Errorf("unschedulable pod: %v, want a start_timeout infrastructure error naming the scheduling", err)
	}
	if rep, _ := big.GC(ctx, sandbox.GCOptions{Run: bigRun}); len(rep.Containers) > 0 {
		t.Errorf("the unschedulable pod was left behind: %v", rep.Containers)
	}
}

// TestKubeRegistryLoader ships an environment through a registry (the
// path of multi-node clusters): the builder pushes it, the node pulls it
// (the node's copy is removed first, so the pull is real), and the pod
// runs it.
func TestKubeRegistryLoader(t *testing.T) {
	registry := os.Getenv("OTCURATE_KUBE_TEST_REGISTRY")
	if registry == "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatal("set OTCURATE_KUBE_TEST_REGISTRY (scripts/kube.sh env)")
		}
		t.Skip("no test registry")
	}
	_, runID := cluster(t) // checks, and cleans up, the run's pods
	engine, _ := sandboxtest.Engine(t, "test-kube-reg-")
	b, err := kube.New(context.Background(), kube.Options{Kubeconfig: os.Getenv("OTCURATE_KUBECONFIG"), RunID: runID, Builder: engine,
		Loader: kube.Registry{Prefix: registry + "/otcurate-test"}, RequestRatio: 0.1, StartTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	task := taskOf(t, "registry", goodDocker+"RUN echo pulled > /pulled\n", goodTest, goodSolve)
	img, err := b.Build(ctx, sandbox.Environment{Hash: task.Bundle.EnvHash, Files: trialtest.EnvFiles(t, task)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(img.Ref, registry+"/otcurate-test/") {
		t.Fatalf("image ref %q is not in the registry", img.Ref)
	}
	// Forget the node's copy (absent on a first run; ctr says so).
	exec.Command("ctr", "--address", os.Getenv("OTCURATE_KUBE_CONTAINERD"), "-n", "k8s.io", "images", "rm", img.Ref).Run()
	sb, err := b.Start(ctx, sandbox.StartSpec{Image: img, Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Stop(ctx)
	if data, err := sb.Download(ctx, "/pulled", 100); err != nil || string(data) != "pulled\n" {
		t.Errorf("the pulled image's file: %q, %v", data, err)
	}
}

// TestKubeConformance holds the Kubernetes backend to the sandbox contract
// (package conformance) on the test cluster. Pods keep their interface
// when they must have no network (a deny-all NetworkPolicy isolates them),
// so the suite probes the API server instead: pods of scripts/kube.sh's
// cluster reach it, and must not without network. The cluster runs on this
// machine, so the pods' processes are visible in /proc.
func TestKubeConformance(t *testing.T) {
	first, firstRun := cluster(t) // skips without a cluster
	rest, err := clientcmd.BuildConfigFromFlags("", os.Getenv("OTCURATE_KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(rest.Host)
	if err != nil {
		t.Fatalf("API server %q: %v", rest.Host, err)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	probe := net.JoinHostPort(u.Hostname(), port)
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		// A pod's loopback is its own: probe the API server on this host's
		// address (scripts/kube.sh binds it on every address).
		probe = net.JoinHostPort(outboundIP(t), port)
	}
	conformance.Run(t, conformance.Harness{
		Backend: func(t *testing.T) (sandbox.Backend, string) {
			if first != nil { // the suite's first call, on this test
				b := first
				first = nil
				return b, firstRun
			}
			return cluster(t)
		},
		BaseImage:    "otcurate/base-bookworm:latest",
		NetworkProbe: probe,
		// scripts/kube.sh's cluster uses the bridge CNI plugin, which does
		// not implement the deny-all NetworkPolicy the backend creates.
		NetworkUnenforced: os.Getenv("OTCURATE_KUBE_NETPOL_UNENFORCED"),
		HostProcesses:     true,
	})
}

// outboundIP is this host's address on its default route (no packet is
// sent: a UDP socket only picks its source).
func outboundIP(t *testing.T) string {
	c, err := net.Dial("udp", "192.0.2.1:9")
	if err != nil {
		t.Fatalf("this host's address: %v", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}
