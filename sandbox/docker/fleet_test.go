package docker_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/docker"
	"github.com/otcurate/otcurate/trial"
)

// FleetEnv names the engines of the fleet tests: the --sandbox list
// scripts/fleet.sh prints (make test sets it). Without it the tests are
// skipped, or fail when OTCURATE_REQUIRE_DOCKER is set.
const FleetEnv = "OTCURATE_FLEET"

func fleetHosts(t *testing.T) []docker.FleetEngine {
	t.Helper()
	if testing.Short() {
		t.Skip("needs several Docker engines")
	}
	spec := os.Getenv(FleetEnv)
	if spec == "" {
		if os.Getenv("OTCURATE_REQUIRE_DOCKER") != "" {
			t.Fatalf("%s is not set: start engines with scripts/fleet.sh up 2", FleetEnv)
		}
		t.Skipf("%s not set (scripts/fleet.sh up 2 prints it)", FleetEnv)
	}
	engines, err := docker.ParseFleet(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(engines) < 3 {
		t.Fatalf("%s lists %d engines, want 3", FleetEnv, len(engines))
	}
	return engines[:3]
}

func newFleet(t *testing.T, engines []docker.FleetEngine, capacity int) (*docker.Fleet, string) {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	runID := "test-fleet-" + hex.EncodeToString(b[:])
	for i := range engines {
		engines[i].Capacity = capacity
	}
	f, err := docker.NewFleet(context.Background(), engines, runID, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rep, _ := f.GC(context.Background(), sandbox.GCOptions{Run: runID})
		if len(rep.Containers) > 0 {
			t.Errorf("run %s left %d containers on the fleet: %v", runID, len(rep.Containers), rep.Containers)
		}
		f.Close()
	})
	return f, runID
}

func testEnvironment(marker string) sandbox.Environment {
	files := []bundle.Entry{{Name: "Dockerfile", Kind: bundle.KindFile, Mode: 0o644,
		Data: []byte("FROM debian:bookworm\nRUN echo " + marker + " > /marker\nWORKDIR /app\n")}}
	sum := 0
	for _, c := range marker {
		sum = sum*31 + int(c)
	}
	return sandbox.Environment{Hash: fmt.Sprintf("%016x%048d", uint64(sum)^0x5eed, 0), Files: files, BuildTimeout: 2 * time.Minute, Task: "fleet/" + marker}
}

// TestFleetPlacesByLoadAndCapacity starts as many sandboxes as the fleet
// holds: each engine gets its capacity's share, the image is built where
// it is used, one more Start waits for a free slot.
func TestFleetPlacesByLoadAndCapacity(t *testing.T) {
	engines := fleetHosts(t)
	f, runID := newFleet(t, engines, 2)
	ctx := context.Background()
	img, err := f.Build(ctx, testEnvironment("placement-"+runID))
	if err != nil {
		t.Fatal(err)
	}
	var sbs []sandbox.Sandbox
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			sb, err := f.Start(ctx, sandbox.StartSpec{Image: img, Labels: map[string]string{sandbox.LabelRun: runID}})
			if err != nil {
				t.Error(err)
				return
			}
			r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "cat /marker"})
			if err != nil || !strings.Contains(string(r.Stdout), "placement-") {
				t.Errorf("exec: %v %q", err, r.Stdout)
			}
			mu.Lock()
			sbs = append(sbs, sb)
			mu.Unlock()
		})
	}
	wg.Wait()
	got := f.Placements()
	for _, e := range engines {
		if got[e.Host] != 2 {
			t.Errorf("placements %v: want 2 on each engine", got)
			break
		}
	}
	// Full: a seventh Start waits.
	short, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	if sb, err := f.Start(short, sandbox.StartSpec{Image: img, Labels: map[string]string{sandbox.LabelRun: runID}}); err == nil {
		sb.Stop(ctx)
		t.Error("a seventh sandbox started on a fleet of 3×2")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("seventh Start: %v, want the context's deadline", err)
	}
	cancel()
	// One stops: the waiting Start gets its slot.
	done := make(chan error, 1)
	go func() {
		sb, err := f.Start(ctx, sandbox.StartSpec{Image: img, Labels: map[string]string{sandbox.LabelRun: runID}})
		if err == nil {
			err = sb.Stop(ctx)
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	sbs[0].Stop(ctx)
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(60 * time.Second):
		t.Error("the waiting Start never got the freed slot")
	}
	for _, sb := range sbs[1:] {
		sb.Stop(ctx)
	}
}

// TestFleetSurvivesEngineLoss runs tasks on 3 engines and kills one engine
// (SIGKILL to its dockerd) while its sandboxes run: every task still gets
// its true reward, from another engine, and none is recorded as a defect.
func TestFleetSurvivesEngineLoss(t *testing.T) {
	engines := fleetHosts(t)
	victim := engines[2].Host
	pidFile := strings.TrimSuffix(strings.TrimPrefix(victim, "unix://"), ".sock") + ".pid" // scripts/fleet.sh's layout
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Skipf("engine %s was not started by scripts/fleet.sh (%v)", victim, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	t.Cleanup(func() { // bring the engine back for later tests
		if out, err := exec.Command("../../scripts/fleet.sh", "up", strconv.Itoa(len(strings.Split(os.Getenv(FleetEnv), ","))-1)).CombinedOutput(); err != nil {
			t.Errorf("restarting the engine: %v\n%s", err, out)
		}
		// The killed engine's containers outlive it: remove them now it answers.
		if d, err := docker.New(context.Background(), docker.Options{Host: victim}); err == nil {
			d.GC(context.Background(), sandbox.GCOptions{})
			d.Close()
		}
	})
	f, runID := newFleet(t, engines, 2)
	runner := &trial.Runner{Backend: f}

	const n = 12
	tasks := make([]*trial.Task, n)
	for i := range tasks {
		var buf bytes.Buffer
		err := bundle.Encode(&buf, []bundle.Entry{
			{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(fmt.Sprintf("touch /app/done (%d)\n", i))},
			{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("")},
			{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian:bookworm\nWORKDIR /app\n")},
			{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755,
				Data: []byte("#!/bin/bash\nsleep 3\n[ -f /app/done ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")},
			{Name: "solution/solve.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\ntouch /app/done\n")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if tasks[i], err = trial.LoadTask(fmt.Sprintf("fleet-%02d", i), buf.Bytes(), bundle.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	results := make([][]trial.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() {
			results[i], errs[i] = runner.Run(context.Background(), tasks[i], trial.Options{Agent: trial.Oracle, Repeats: 2,
				Labels: map[string]string{sandbox.LabelRun: runID}, Backoff: 500 * time.Millisecond, InfraRetries: 3})
		})
	}
	// Kill the victim once it runs some of them.
	deadline := time.Now().Add(2 * time.Minute)
	for f.Placements()[victim] == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, rs := range results {
		if errs[i] != nil {
			t.Errorf("task %d: %v", i, errs[i])
			continue
		}
		for _, r := range rs {
			if r.Outcome != trial.Scored || r.Reward == nil || *r.Reward != 1 {
				t.Errorf("task %d repeat %d: %s %v (%s), want scored 1", i, r.Repeat, r.Outcome, r.Reward, r.Detail)
			}
		}
	}
	t.Logf("placements %v (victim %s killed after its first sandboxes started)", f.Placements(), victim)
}

// TestFleetSSHEngine reaches an engine over ssh:// (sshd + `docker system
// dial-stdio` on the far side, as with `docker -H ssh://`): a build, a
// sandbox, an exec with output and exit code, a timeout, a terminal (a
// hijacked, half-closed stream) and files, in a fleet beside a local
// engine. make test sets OTCURATE_SSH_ENGINE and OTCURATE_SSH_FLAGS from
// scripts/fleet.sh ssh.
func TestFleetSSHEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("needs sshd and a Docker engine")
	}
	host := os.Getenv("OTCURATE_SSH_ENGINE")
	if host == "" {
		if os.Getenv("OTCURATE_REQUIRE_DOCKER") != "" {
			t.Fatal("OTCURATE_SSH_ENGINE is not set: scripts/fleet.sh ssh prints it")
		}
		t.Skip("OTCURATE_SSH_ENGINE not set (scripts/fleet.sh ssh)")
	}
	// The ssh engine alone (capacity 1 each, so the second sandbox lands on it).
	f, _ := newFleet(t, []docker.FleetEngine{{Host: "unix:///var/run/docker.sock"}, {Host: host}}, 1)
	ctx := context.Background()
	env := testEnvironment("ssh")
	img, err := f.Build(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	var sbs []sandbox.Sandbox
	for range 2 {
		sb, err := f.Start(ctx, sandbox.StartSpec{Image: img, Workdir: "/app"})
		if err != nil {
			t.Fatal(err)
		}
		sbs = append(sbs, sb)
	}
	if p := f.Placements(); p[host] != 1 {
		t.Fatalf("placements %v: want one sandbox on %s", p, host)
	}
	for _, sb := range sbs {
		r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "cat /marker; pwd; echo err >&2; exit 3"})
		if err != nil || string(r.Stdout) != "ssh\n/app\n" || string(r.Stderr) != "err\n" || r.ExitCode != 3 {
			t.Errorf("exec: %q %q %d, %v", r.Stdout, r.Stderr, r.ExitCode, err)
		}
		if r, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "sleep 60", Timeout: time.Second}); err != nil || !r.TimedOut {
			t.Errorf("timeout: %+v, %v", r, err)
		}
		if err := sb.Upload(ctx, "/tests", []bundle.Entry{{Name: "x.txt", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("over ssh")}}); err != nil {
			t.Error(err)
		}
		if data, err := sb.Download(ctx, "/tests/x.txt", 100); err != nil || string(data) != "over ssh" {
			t.Errorf("download: %q, %v", data, err)
		}
		term, err := sb.OpenTerminal(ctx, sandbox.TerminalSpec{})
		if err != nil {
			t.Fatal(err)
		}
		term.Write([]byte("echo $((40+2))z\nexit\n"))
		var screen bytes.Buffer
		deadline := time.Now().Add(20 * time.Second)
		buf := make([]byte, 4096)
		for !strings.Contains(screen.String(), "42z") && time.Now().Before(deadline) {
			n, err := term.Read(buf)
			screen.Write(buf[:n])
			if err != nil {
				break
			}
		}
		term.Close()
		if !strings.Contains(screen.String(), "42z") {
			t.Errorf("terminal: %q", screen.String())
		}
		if err := sb.Stop(ctx); err != nil {
			t.Error(err)
		}
	}
}
