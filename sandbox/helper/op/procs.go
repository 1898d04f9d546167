package op

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ProcID names one process for its whole life: its pid and its start time
// (field 22 of /proc/PID/stat, in clock ticks since boot).
type ProcID struct {
	PID   int
	Start uint64
}

func (p ProcID) String() string { return strconv.Itoa(p.PID) + ":" + strconv.FormatUint(p.Start, 10) }

// ParseBaseline reads a list of "PID:STARTTIME" separated by spaces,
// commas or newlines (what Snapshot and sandbox.ShellSnapshot print).
func ParseBaseline(s string) (map[ProcID]bool, error) {
	out := map[ProcID]bool{}
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		pid, start, ok := strings.Cut(w, ":")
		p, err1 := strconv.Atoi(pid)
		st, err2 := strconv.ParseUint(start, 10, 64)
		if !ok || err1 != nil || err2 != nil || p <= 0 {
			return nil, fmt.Errorf("baseline entry %q: want PID:STARTTIME", w)
		}
		out[ProcID{p, st}] = true
	}
	return out, nil
}

// procStat reads a process's start time, parent and state.
func procStat(pid int) (start uint64, ppid int, state byte, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return start, ppid, f[0][0], true
}

// pids lists the numeric entries of /proc.
func pids() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(names))
	for _, n := range names {
		if p, err := strconv.Atoi(n); err == nil && p > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

// Snapshot lists every live process (zombies left out).
func Snapshot() ([]ProcID, error) {
	ps, err := pids()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []ProcID
	for _, p := range ps {
		if st, _, state, ok := procStat(p); ok && state != 'Z' && state != 'X' {
			out = append(out, ProcID{p, st})
		}
	}
	return out, nil
}

// KillAll kills every process but PID 1, the caller, its ancestors (the
// exec chain that started it) and the baseline, pass after pass until a
// pass finds none, or fails after limit. Every victim is pinned by a pidfd
// and its start time checked after the pidfd is open, so a pid reused by a
// process of the baseline is never signalled; each pass stops every victim
// before killing any, so a fork loop cannot outrun it. It returns how
// many processes it signalled.
func KillAll(baseline map[ProcID]bool, limit time.Duration) (int, error) {
	spare := map[int]bool{1: true}
	for p := os.Getpid(); p > 0 && !spare[p]; {
		spare[p] = true
		_, pp, _, ok := procStat(p)
		if !ok {
			break
		}
		p = pp
	}
	usePidfd := true
	deadline := time.Now().Add(limit)
	killed := 0
	for pass := 0; ; pass++ {
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("processes still appear after %d kill passes in %s", pass, limit)
		}
		ps, err := pids()
		if err != nil {
			return killed, fmt.Errorf("list processes: %w", err)
		}
		var fds []int
		var plain []int // without pidfd_open (Linux < 5.3)
		for _, p := range ps {
			if spare[p] {
				continue
			}
			st, _, state, ok := procStat(p)
			if !ok || state == 'Z' || state == 'X' || baseline[ProcID{p, st}] {
				continue
			}
			fd := -1
			if usePidfd {
				fd, err = unix.PidfdOpen(p, 0)
				if errors.Is(err, unix.ENOSYS) {
					usePidfd = false
				} else if err != nil {
					continue // gone
				}
			}
			// Checked after the pidfd pins the pid: the process it names
			// is still the one listed (or gone, and signals fail).
			if st2, _, _, ok := procStat(p); !ok || st2 != st {
				if fd >= 0 {
					unix.Close(fd)
				}
				continue // gone or reused: the next pass sees it again
			}
			if fd >= 0 {
				fds = append(fds, fd)
			} else {
				plain = append(plain, p)
			}
		}
		if len(fds)+len(plain) == 0 {
			return killed, nil
		}
		killed += len(fds) + len(plain)
		for _, fd := range fds {
			unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0)
		}
		for _, p := range plain {
			unix.Kill(p, unix.SIGSTOP)
		}
		for _, fd := range fds {
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			unix.Close(fd)
		}
		for _, p := range plain {
			unix.Kill(p, unix.SIGKILL)
		}
		if pass > 0 {
			time.Sleep(time.Millisecond) // let the killed ones exit before the next look
		}
	}
}
