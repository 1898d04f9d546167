package docker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/sandbox"
)

func TestStorageQuotaDrivers(t *testing.T) {
	cases := []struct {
		driver, backing string
		want            bool
	}{
		{"overlay2", "extfs", false},
		{"overlay2", "xfs", true},
		{"devicemapper", "", true},
		{"btrfs", "btrfs", true},
		{"zfs", "zfs", true},
		{"vfs", "extfs", false},
		{"fuse-overlayfs", "", false},
	}
	for _, tc := range cases {
		if got := storageQuota(tc.driver, tc.backing); got != tc.want {
			t.Errorf("storageQuota(%s, %s) = %v, want %v", tc.driver, tc.backing, got, tc.want)
		}
	}
}

func TestApplyLimits(t *testing.T) {
	cases := []struct {
		name      string
		hostCPUs  int
		res       sandbox.Resources
		quota     bool
		wantNano  int64
		wantMem   int64
		wantSize  string
		wantWarns int
	}{
		{"within host", 4, sandbox.Resources{CPUs: 1.5, MemoryMB: 512}, false, 1_500_000_000, 512 << 20, "", 0},
		{"above host", 2, sandbox.Resources{CPUs: 1000}, false, 2_000_000_000, 0, "", 1},
		{"below the minimum", 2, sandbox.Resources{CPUs: 0.001, MemoryMB: 1}, false, 10_000_000, 6 << 20, "", 2},
		{"host unknown", 0, sandbox.Resources{CPUs: 1000}, false, 1000_000_000_000, 0, "", 0},
		{"memory saturates", 2, sandbox.Resources{MemoryMB: math.MaxInt64}, false, 0, math.MaxInt64, "", 0},
		{"quota", 2, sandbox.Resources{StorageMB: 512}, true, 0, 0, "512M", 0},
		{"no quota", 2, sandbox.Resources{StorageMB: 512}, false, 0, 0, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := &container.HostConfig{}
			warns := applyLimits(&hostFacts{cpus: tc.hostCPUs}, tc.res, tc.quota, hc)
			if hc.NanoCPUs != tc.wantNano || hc.Memory != tc.wantMem || hc.StorageOpt["size"] != tc.wantSize || len(warns) != tc.wantWarns {
				t.Errorf("got nano %d mem %d size %q warnings %v", hc.NanoCPUs, hc.Memory, hc.StorageOpt["size"], warns)
			}
		})
	}
}

// TestSandboxCapabilities: a sandbox's root cannot create device nodes or
// gain privileges, but keeps what package installs and user management
// need.
func TestSandboxCapabilities(t *testing.T) {
	e := needDocker(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t)})
	res := run(t, sb, sandbox.ExecRequest{Cmd: "mknod /tmp/null c 1 3", User: "root", Timeout: time.Minute})
	if res.ExitCode == 0 {
		t.Fatalf("mknod succeeded inside the sandbox")
	}
	res = run(t, sb, sandbox.ExecRequest{Cmd: "mkfifo /tmp/fifo && useradd -m probe && chown probe /tmp/fifo && su probe -c 'id -u' && grep NoNewPrivs /proc/self/status", User: "root", Timeout: time.Minute})
	if res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "NoNewPrivs:\t1") {
		t.Fatalf("user management as root: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// TestSandboxCPUClamp: a CPU request above the host's cores starts, on
// the host's cores, with a warning (it used to fail at create, retried as
// infrastructure forever).
func TestSandboxCPUClamp(t *testing.T) {
	e := needDocker(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t), Resources: sandbox.Resources{CPUs: 1000}})
	warns := sandbox.WarningsOf(sb)
	if len(warns) != 1 || !strings.Contains(warns[0], "clamped") {
		t.Fatalf("warnings %v, want the clamp", warns)
	}
	ins, err := e.d.cli.ContainerInspect(context.Background(), sb.ID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ins.Container.HostConfig.NanoCPUs, int64(e.d.host().cpus)*1e9; got != want {
		t.Errorf("NanoCPUs %d, want %d", got, want)
	}
	// Below the engine's minimums: raised, and the sandbox starts.
	small := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t), Resources: sandbox.Resources{CPUs: 0.001, MemoryMB: 1}})
	if warns := sandbox.WarningsOf(small); len(warns) != 2 {
		t.Errorf("warnings %v, want both raised", warns)
	}
}

// TestSandboxStorageLimit writes 2 GB into a sandbox limited to 512 MB:
// with a driver quota the write fails at the bound; without one (overlay2
// over ext4) the watchdog kills the sandbox and reports a LimitError,
// having let at most its overshoot past the bound.
func TestSandboxStorageLimit(t *testing.T) {
	e := needDocker(t)
	sb := start(t, e.d, sandbox.StartSpec{Image: sharedImage(t), Resources: sandbox.Resources{StorageMB: 512}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "dd if=/dev/zero of=/big bs=1M count=2048 conv=fsync status=none; stat -c %s /big", User: "root", Timeout: time.Minute})
	if e.d.host().quota && !e.d.noQuota.Load() {
		if err != nil || strings.TrimSpace(string(res.Stdout)) == fmt.Sprint(2048<<20) {
			t.Fatalf("quota: %v, %q: want the write refused at the bound", err, res.Stdout)
		}
		return
	}
	le := sandbox.Exceeded(sb)
	if le == nil {
		t.Fatalf("no LimitError after writing 2 GB (exec: %v, exit %d, %q)", err, res.ExitCode, res.Stdout)
	}
	if le.Resource != "storage" || le.LimitMB != 512 || le.UsedMB <= 512 {
		t.Errorf("LimitError %+v", le)
	}
	if le.UsedMB >= 2048 {
		t.Errorf("the watchdog let the whole 2 GB through (%d MB)", le.UsedMB)
	}
	t.Logf("killed at %d MB (limit 512 MB)", le.UsedMB)
	// The sandbox is ended: what comes next fails, and the LimitError stays.
	if _, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "true", Timeout: 10 * time.Second}); err == nil {
		t.Errorf("exec in a sandbox past its storage limit succeeded")
	}
	var le2 *sandbox.LimitError
	if le2 = sandbox.Exceeded(sb); !errors.Is(error(le2), error(le)) {
		t.Errorf("LimitError changed: %v then %v", le, le2)
	}
}

// limitedSandbox is a sandbox that reports a limit and a warning.
type limitedSandbox struct{ sandbox.Sandbox }

func (limitedSandbox) LimitExceeded() *sandbox.LimitError {
	return &sandbox.LimitError{Resource: "storage", LimitMB: 1, UsedMB: 2}
}
func (limitedSandbox) Warnings() []string { return []string{"clamped"} }

// TestFleetSandboxForwardsLimits: a fleet's wrapper does not hide what
// its engine's sandbox reports.
func TestFleetSandboxForwardsLimits(t *testing.T) {
	fs := &fleetSandbox{Sandbox: limitedSandbox{}}
	if le := sandbox.Exceeded(fs); le == nil || le.UsedMB != 2 {
		t.Errorf("Exceeded through the fleet: %v", le)
	}
	if w := sandbox.WarningsOf(fs); len(w) != 1 {
		t.Errorf("WarningsOf through the fleet: %v", w)
	}
}
