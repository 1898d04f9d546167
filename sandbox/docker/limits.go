package docker

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/sandbox"
)

// hostFacts is what the engine's host offers, read once per Engine from
// `docker info`.
type hostFacts struct {
	cpus int // the host's cores; 0 = unknown (no clamp)
	// quota: the storage driver enforces a per-container size
	// (HostConfig.StorageOpt size=): devicemapper, btrfs, zfs, and
	// overlay2 over xfs (which also needs the pquota mount option; a
	// refusal at create turns it off, see noQuota).
	quota           bool
	driver, backing string
}

// loadHostFacts asks the engine once. A failure leaves the facts unknown:
// CPU requests pass unclamped and storage is watched (the safe fallback).
func (d *Engine) loadHostFacts() hostFacts {
	ctx, cancel := context.WithTimeout(d.ctx, pingTimeout)
	defer cancel()
	res, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		d.log.Warn("docker info failed; CPU requests are not clamped and storage limits are watched", "err", err)
		return hostFacts{}
	}
	f := hostFacts{cpus: res.Info.NCPU, driver: res.Info.Driver}
	for _, kv := range res.Info.DriverStatus {
		if kv[0] == "Backing Filesystem" {
			f.backing = kv[1]
		}
	}
	f.quota = storageQuota(f.driver, f.backing)
	d.log.Debug("engine host", "cpus", f.cpus, "driver", f.driver, "backing", f.backing, "storage_quota", f.quota)
	return f
}

// storageQuota reports whether a storage driver (over its backing
// filesystem) enforces StorageOpt size=.
func storageQuota(driver, backing string) bool {
	switch driver {
	case "devicemapper", "btrfs", "zfs":
		return true
	case "overlay2", "overlay":
		return backing == "xfs"
	}
	return false
}

// isQuotaRefusal reports a create error caused by StorageOpt on a driver
// that cannot honour it (overlay2 over xfs without pquota).
func isQuotaRefusal(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "storage-opt") || strings.Contains(msg, "pquota") || strings.Contains(msg, "StorageOpt")
}

// mbBytes converts megabytes to bytes, saturating instead of wrapping
// (task.toml bounds make saturation unreachable from a task).
func mbBytes(mb int64) int64 {
	if mb <= 0 {
		return 0
	}
	if mb > math.MaxInt64>>20 {
		return math.MaxInt64
	}
	return mb << 20
}

// The smallest limits the engine accepts at create: below them a create
// fails, which would be retried as infrastructure.
const (
	minCPUs     = 0.01
	minMemoryMB = 6
)

// applyLimits sets the resource limits of host from spec.Resources on this
// engine's host and returns the warnings to report. A request the host
// cannot meet is adjusted once, never an error retried forever: CPUs
// above the host's cores are clamped to them (the task runs slower than
// asked), and CPUs or memory below the engine's minimum are raised to it.
// Storage is a quota when the driver enforces one (quota), else left to
// the watchdog (watchStorage).
func applyLimits(host *hostFacts, r sandbox.Resources, quota bool, hc *container.HostConfig) []string {
	var warn []string
	cpus := r.CPUs
	switch {
	case host.cpus > 0 && cpus > float64(host.cpus):
		warn = append(warn, fmt.Sprintf("cpus = %g clamped to the host's %d cores", cpus, host.cpus))
		cpus = float64(host.cpus)
	case cpus > 0 && cpus < minCPUs:
		warn = append(warn, fmt.Sprintf("cpus = %g raised to the engine's minimum %g", cpus, minCPUs))
		cpus = minCPUs
	}
	if cpus > 0 {
		hc.Resources.NanoCPUs = int64(math.Round(cpus * 1e9))
	}
	mem := r.MemoryMB
	if mem > 0 && mem < minMemoryMB {
		warn = append(warn, fmt.Sprintf("memory_mb = %d raised to the engine's minimum %d", mem, minMemoryMB))
		mem = minMemoryMB
	}
	hc.Resources.Memory = mbBytes(mem)
	if quota && r.StorageMB > 0 {
		hc.StorageOpt = map[string]string{"size": fmt.Sprintf("%dM", r.StorageMB)}
	}
	return warn
}

// Storage watchdog timing: the writable layer is measured every
// storagePoll, or storagePollCost times the last measurement's duration
// when that is longer (a layer of many files is slow to measure; the
// engine then spends at most a fifth of its time on it per sandbox), but
// never less often than every storagePollMax. What a task writes past its
// bound before the next measurement is the overshoot: about the disk's
// write rate times the interval.
const (
	storagePoll     = 250 * time.Millisecond
	storagePollMax  = 2 * time.Second
	storagePollCost = 4
)

// storageWatch is a sandbox's storage watchdog state.
type storageWatch struct {
	limitMB int64
	mu      sync.Mutex
	err     *sandbox.LimitError // set once the limit was exceeded
	done    chan struct{}       // closed by Stop
	once    sync.Once
}

// watchStorage starts the watchdog of a sandbox whose storage limit the
// driver cannot enforce: it measures the container's writable layer
// (SizeRw) and, past the limit, kills the container and records a
// *sandbox.LimitError (LimitExceeded).
func (s *dockerSandbox) watchStorage(limitMB int64) {
	w := &storageWatch{limitMB: limitMB, done: make(chan struct{})}
	s.storage = w
	s.d.bg.Add(1)
	go func() {
		defer s.d.bg.Done()
		interval := storagePoll
		for {
			t := time.NewTimer(interval)
			select {
			case <-t.C:
			case <-w.done:
				t.Stop()
				return
			case <-s.d.ctx.Done():
				t.Stop()
				return
			}
			start := time.Now()
			if over := s.measureStorage(s.d.ctx); over {
				return
			}
			interval = min(max(storagePoll, storagePollCost*time.Since(start)), storagePollMax)
		}
	}()
}

// measureStorage measures the writable layer once and enforces the limit;
// it reports whether the limit is exceeded (now or before).
func (s *dockerSandbox) measureStorage(ctx context.Context) bool {
	w := s.storage
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return true
	}
	res, err := s.d.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{Size: true})
	if err != nil || res.Container.SizeRw == nil {
		return false // gone (stopped) or not measurable this time
	}
	used := *res.Container.SizeRw
	if used <= mbBytes(w.limitMB) {
		return false
	}
	w.err = &sandbox.LimitError{Resource: "storage", LimitMB: w.limitMB, UsedMB: used >> 20}
	kctx, cancel := cleanupContext(ctx)
	defer cancel()
	if _, err := s.d.cli.ContainerKill(kctx, s.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		s.d.log.Warn("cannot kill a sandbox past its storage limit", "container", shortID(s.id), "err", err)
	}
	s.d.log.Info("sandbox killed: storage limit exceeded", "container", shortID(s.id), "used_mb", used>>20, "limit_mb", w.limitMB)
	return true
}

// LimitExceeded implements sandbox.LimitWatcher. While the watchdog has
// not fired it measures once more, so what was written since its last
// measurement counts too.
func (s *dockerSandbox) LimitExceeded() *sandbox.LimitError {
	w := s.storage
	if w == nil {
		return nil
	}
	if !s.isStopped() {
		s.measureStorage(context.WithoutCancel(s.d.ctx))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// stopWatch ends the watchdog (from Stop).
func (s *dockerSandbox) stopWatch() {
	if s.storage != nil {
		s.storage.once.Do(func() { close(s.storage.done) })
	}
}

// Warnings implements sandbox.Warner.
func (s *dockerSandbox) Warnings() []string { return s.warnings }
