package fake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The processes of a sandbox, seen from this host. Every process of the
// sandbox's PID namespace is found by its /proc/PID/ns/pid; the nsenter
// wrappers this package starts for execs and terminals live outside the
// namespace (they are this process's children) and are tracked by the
// container.
//
// Why the wrappers matter: nsenter forks the command into the namespace
// and waits for it with WUNTRACED; when the command is stopped (SIGSTOP,
// SIGTSTP...), nsenter stops itself with SIGSTOP and waits for a SIGCONT
// that nobody sends. A process of the namespace whose parent is outside
// it must be reaped by that parent before the namespace's init can finish
// exiting (the kernel's zap_pid_ns_processes waits for it), so a stopped
// nsenter holding a dead child keeps the init, and Stop, waiting forever.

// procID names a process across PID reuse.
type procID struct {
	pid   int
	start uint64
}

// procInfo is what this package reads of a process.
type procInfo struct {
	procID
	ppid  int
	state byte
	flags uint64 // the kernel's task flags (PF_*)
}

// readProc reads a process's start time, parent, state and flags from
// /proc/PID/stat.
func readProc(pid int) (procInfo, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || len(f[0]) == 0 {
		return procInfo{}, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procInfo{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procInfo{}, false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return procInfo{}, false
	}
	return procInfo{procID: procID{pid, start}, ppid: ppid, state: f[0][0], flags: flags}, true
}

// nsID identifies a namespace (the nsfs inode).
type nsID struct{ dev, ino uint64 }

// pidNamespace is the PID namespace of a process.
func pidNamespace(pid int) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st); err != nil {
		return nsID{}, err
	}
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// nsProcs lists every process of the PID namespace ns, zombies included.
func nsProcs(ns nsID) ([]procInfo, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if id, err := pidNamespace(pid); err != nil || id != ns {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// signalProc sends sig through a pidfd after checking that the pid still
// names the same process (never a reused pid).
func signalProc(p procID, sig unix.Signal) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if q, ok := readProc(p.pid); !ok || q.start != p.start {
		return
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
}

// dying reports whether a process is dead or on its way: a SIGKILL is
// pending for it, or it is already in the kernel's exit path (PF_EXITING).
// A process the agent just killed with kill -9 is in that state for a
// moment after kill(2) returns, before it becomes a zombie.
func dying(p procID) bool {
	q, ok := readProc(p.pid)
	if gone(p, q, ok) || q.flags&pfExiting != 0 {
		return true
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/status")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, mask, ok := strings.Cut(line, ":")
		if !ok || (name != "SigPnd" && name != "ShdPnd") {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64); err == nil && m&(1<<(uint(unix.SIGKILL)-1)) != 0 {
			return true
		}
	}
	return false
}

// pfExiting is the kernel's PF_EXITING task flag (include/linux/sched.h),
// field 9 of /proc/PID/stat.
const pfExiting = 0x4

// dead reports whether a process is gone or a zombie.
func dead(p procID) bool {
	q, ok := readProc(p.pid)
	return gone(p, q, ok)
}

// gone reports whether q (read by readProc, ok) shows p gone or a zombie.
func gone(p procID, q procInfo, ok bool) bool {
	return !ok || q.start != p.start || q.state == 'Z' || q.state == 'X'
}

// killPassesMax bounds the passes of killNamespace.
const killPassesMax = 50

// killNamespace kills every live process of the container's PID namespace
// but the init and those in keep, from this host: each pass stops the
// victims whose parent is in the namespace (so a fork cannot outrun the
// kill), kills every victim, lets the wrappers run (see above: a victim
// whose parent is outside the namespace is never stopped, so its nsenter
// reaps it), and waits for them to die, until a pass finds none.
func (c *container) killNamespace(ctx context.Context, keep map[procID]bool) error {
	for range killPassesMax {
		procs, err := nsProcs(c.pidNS)
		if err != nil {
			return infra("list the sandbox's processes", err)
		}
		inside := make(map[int]bool, len(procs))
		for _, p := range procs {
			inside[p.pid] = true
		}
		var victims []procInfo
		for _, p := range procs {
			if p.pid != c.pid && !keep[p.procID] && p.state != 'Z' && p.state != 'X' {
				victims = append(victims, p)
			}
		}
		if len(victims) == 0 {
			return nil
		}
		for _, p := range victims {
			if inside[p.ppid] {
				signalProc(p.procID, unix.SIGSTOP)
			}
		}
		for _, p := range victims {
			signalProc(p.procID, unix.SIGKILL)
		}
		c.signalWrappers(syscall.SIGCONT)
		deadline := time.Now().Add(time.Second)
		for _, p := range victims {
			for !dead(p.procID) && time.Now().Before(deadline) {
				if err := sleepCtx(ctx, time.Millisecond); err != nil {
					return fmt.Errorf("kill the agent's processes: %w", err)
				}
			}
		}
	}
	return infra("kill the agent's processes", errors.New("processes keep appearing"))
}

// addWrapper tracks a wrapper process started from this host.
func (c *container) addWrapper(p *os.Process) {
	c.wrapMu.Lock()
	defer c.wrapMu.Unlock()
	if c.wrappers == nil {
		c.wrappers = map[*os.Process]struct{}{}
	}
	c.wrappers[p] = struct{}{}
}

// dropWrapper forgets a wrapper once it has been waited for.
func (c *container) dropWrapper(p *os.Process) {
	c.wrapMu.Lock()
	defer c.wrapMu.Unlock()
	delete(c.wrappers, p)
}

// signalWrappers sends sig to every wrapper still running (os.Process
// signals through a pidfd: never a reused pid).
func (c *container) signalWrappers(sig os.Signal) {
	c.wrapMu.Lock()
	defer c.wrapMu.Unlock()
	for p := range c.wrappers {
		_ = p.Signal(sig)
	}
}

// wrapperCount is the number of wrappers not yet waited for.
func (c *container) wrapperCount() int {
	c.wrapMu.Lock()
	defer c.wrapMu.Unlock()
	return len(c.wrappers)
}
