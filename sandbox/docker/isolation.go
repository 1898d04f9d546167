package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/otcurate/otcurate/sandbox"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/bundle"
)

// The verifier-isolation methods of a Docker sandbox (see sandbox.ShellIsolation
// for what they guarantee). In the direct mode they work from the host;
// otherwise they fall back to sandbox.ShellIsolation.

// procID names one process for its whole life: a pid and its start time.
type procID struct {
	pid   int
	start uint64
}

// recordBaseline remembers the processes running when Start returns:
// KillAll spares them.
func (s *dockerSandbox) recordBaseline(ctx context.Context) error {
	if s.direct != nil {
		cg, err := s.direct.cgroupDirs()
		if err == nil {
			var procs []procID
			if procs, err = s.waitMain(ctx, cg); err == nil {
				s.cgroup, s.baseline = cg, map[procID]bool{}
				for _, p := range procs {
					s.baseline[p] = true
				}
				return nil
			}
		}
		s.d.log.Debug("container cgroup not reachable; KillAll runs in the sandbox", "container", shortID(s.id), "err", err)
	}
	snap, err := sandbox.ShellSnapshot(ctx, s)
	if err != nil {
		s.d.log.Warn("cannot list the sandbox's processes; KillAll will spare only PID 1", "container", shortID(s.id), "err", err)
	}
	s.shellBaseline = snap
	return nil
}

// waitMain lists the cgroup's processes once the init has started the
// main process (its child, which it may not have forked yet when the
// start returns), and remembers that process: when it is gone the
// sandbox is ending.
func (s *dockerSandbox) waitMain(ctx context.Context, cg *cgroupDirs) ([]procID, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		procs, err := cg.procs()
		if err != nil {
			return nil, err
		}
		for _, p := range procs {
			if _, ppid, _, ok := procStat(p.pid); ok && ppid == s.direct.pid {
				s.mainProc = p
				return procs, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the container's init started no main process")
		}
		if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

func (s *dockerSandbox) shell() sandbox.ShellIsolation {
	return sandbox.ShellIsolation{SB: s, Baseline: s.shellBaseline}
}

// KillAll implements sandbox.Sandbox.KillAll.
func (s *dockerSandbox) KillAll(ctx context.Context) error {
	if s.isStopped() {
		return errSandboxStopped
	}
	if s.cgroup == nil {
		return s.shell().KillAll(ctx)
	}
	err := s.cgroup.killAll(ctx, s.baseline)
	if err == nil {
		if start, _, state, ok := procStat(s.mainProc.pid); ok && start == s.mainProc.start && state != 'Z' && state != 'X' &&
			!procDying(s.mainProc.pid) {
			return nil
		}
		// The main process is gone (the agent killed it): the container
		// is ending.
		err = errors.New("the sandbox's main process is gone")
	}
	if exited := s.exitedState(ctx); exited != nil {
		return exited
	}
	return fmt.Errorf("kill the agent's processes: %w", err)
}

// exitedState is called after a host-side operation failed: an
// *sandbox.ExitedError when the container no longer runs (its state is given a
// few seconds to settle: the operation may have seen the init process go
// before the engine did), an infrastructure error when the engine does
// not answer, else nil.
func (s *dockerSandbox) exitedState(ctx context.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := s.d.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
		if err != nil {
			return engineError(ctx, "inspect container", err)
		}
		st := res.Container.State
		if st != nil && !st.Running {
			return &sandbox.ExitedError{ExitCode: st.ExitCode, OOMKilled: st.OOMKilled}
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-s.exited:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ReadFile implements sandbox.Sandbox.ReadFile.
func (s *dockerSandbox) ReadFile(ctx context.Context, p string, max int64, tail bool) ([]byte, error) {
	if max <= 0 {
		max = sandbox.DefaultMaxOutput
	}
	if s.isStopped() {
		return nil, errSandboxStopped
	}
	if s.direct == nil {
		return s.shell().ReadFile(ctx, p, max, tail)
	}
	data, err := s.direct.readRegular(p, max, tail)
	if errors.Is(err, errNotDirect) {
		if exited := s.exitedState(ctx); exited != nil {
			return nil, exited
		}
	}
	return data, err
}

// ResetDir implements sandbox.Sandbox.ResetDir.
func (s *dockerSandbox) ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error {
	if s.isStopped() {
		return errSandboxStopped
	}
	if s.direct == nil {
		return s.shell().ResetDir(ctx, dir, mode, files)
	}
	err := s.direct.resetDir(dir, mode, files)
	if errors.Is(err, errNotDirect) {
		if exited := s.exitedState(ctx); exited != nil {
			return exited
		}
	}
	return err
}

// NetAttempts implements sandbox.Sandbox.NetAttempts.
func (s *dockerSandbox) NetAttempts(ctx context.Context) (uint64, bool, error) {
	if s.direct == nil {
		return 0, false, nil
	}
	n, err := s.direct.noRoutes()
	if err != nil {
		if exited := s.exitedState(ctx); exited != nil {
			return 0, false, exited
		}
		return 0, false, nil // not observable: no evidence either way
	}
	return n, true, nil
}

// cgroupDirs are the host paths of a container's cgroup: where its
// processes are listed and how it is frozen.
type cgroupDirs struct {
	procsFile  string // cgroup.procs
	freezeFile string // v1 freezer.state or v2 cgroup.freeze ("" = no freezer)
	v2         bool
}

// cgroupDirs finds the container's cgroup from its init's
// /proc/PID/cgroup: the v1 freezer hierarchy when mounted, else the
// unified one.
func (r *directRoot) cgroupDirs() (*cgroupDirs, error) {
	root, err := r.open() // checks that the pid is still the container's
	if err != nil {
		return nil, err
	}
	unix.Close(root)
	data, err := os.ReadFile("/proc/" + strconv.Itoa(r.pid) + "/cgroup")
	if err != nil {
		return nil, err
	}
	var v1, v2 string
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case parts[1] == "freezer":
			v1 = parts[2]
		}
	}
	if v1 != "" {
		dir := "/sys/fs/cgroup/freezer" + v1
		if _, err := os.Stat(dir + "/freezer.state"); err == nil {
			return &cgroupDirs{procsFile: dir + "/cgroup.procs", freezeFile: dir + "/freezer.state"}, nil
		}
	}
	if v2 != "" {
		for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			dir := mnt + v2
			if _, err := os.Stat(dir + "/cgroup.procs"); err != nil || v2 == "/" {
				continue
			}
			cg := &cgroupDirs{procsFile: dir + "/cgroup.procs", v2: true}
			if _, err := os.Stat(dir + "/cgroup.freeze"); err == nil {
				cg.freezeFile = dir + "/cgroup.freeze"
			}
			return cg, nil
		}
	}
	return nil, fmt.Errorf("no cgroup of %s found", shortID(r.id))
}

// procs lists the live (not zombie) processes of the cgroup.
func (c *cgroupDirs) procs() ([]procID, error) {
	data, err := os.ReadFile(c.procsFile)
	if err != nil {
		return nil, err
	}
	var out []procID
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if start, _, state, ok := procStat(pid); ok && state != 'Z' && state != 'X' {
			out = append(out, procID{pid, start})
		}
	}
	return out, nil
}

// procStat reads a process's start time, parent and state from
// /proc/PID/stat.
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
	if len(f) < 20 {
		return 0, 0, 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	ppid, err2 := strconv.Atoi(f[1])
	return start, ppid, f[0][0], err == nil && err2 == nil
}

// procDying reports whether a process is exiting or has a SIGKILL
// pending (sent, e.g. by kill -9 -1, but not yet acted on).
func procDying(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(data, ')'); i >= 0 {
		if f := strings.Fields(string(data[i+1:])); len(f) > 6 {
			if flags, err := strconv.ParseUint(f[6], 10, 64); err == nil && flags&0x4 != 0 { // PF_EXITING
				return true
			}
		}
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "SigPnd" && k != "ShdPnd") {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&(1<<(unix.SIGKILL-1)) != 0 {
			return true
		}
	}
	return false
}

// freeze freezes (or thaws) the cgroup and waits until it is.
func (c *cgroupDirs) freeze(ctx context.Context, on bool) error {
	if c.freezeFile == "" {
		return nil
	}
	val, want := "THAWED", "THAWED"
	if c.v2 {
		val = "0"
	}
	if on {
		val, want = "FROZEN", "FROZEN"
		if c.v2 {
			val = "1"
		}
	}
	if err := os.WriteFile(c.freezeFile, []byte(val), 0); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var done bool
		if c.v2 {
			ev, err := os.ReadFile(path.Join(path.Dir(c.freezeFile), "cgroup.events"))
			if err != nil {
				return err
			}
			done = bytes.Contains(ev, []byte("frozen "+val))
		} else {
			st, err := os.ReadFile(c.freezeFile)
			if err != nil {
				return err
			}
			done = strings.TrimSpace(string(st)) == want
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cgroup did not reach %s", want)
		}
		if err := sleepCtx(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}

// killAll freezes the cgroup, kills every process not in keep, thaws, and
// repeats until no such process is left (a kill may race a fork that the
// freeze interrupted).
func (c *cgroupDirs) killAll(ctx context.Context, keep map[procID]bool) error {
	for round := 0; round < 50; round++ {
		if err := c.freeze(ctx, true); err != nil {
			_ = c.freeze(context.WithoutCancel(ctx), false)
			return fmt.Errorf("freeze: %w", err)
		}
		procs, err := c.procs()
		var victims []procID
		if err == nil {
			for _, p := range procs {
				if !keep[p] {
					victims = append(victims, p)
				}
			}
			for _, p := range victims {
				killProc(p)
			}
		}
		if terr := c.freeze(context.WithoutCancel(ctx), false); terr != nil && err == nil {
			err = fmt.Errorf("thaw: %w", terr)
		}
		if err != nil {
			return err
		}
		if len(victims) == 0 {
			return nil
		}
		waitGone(ctx, victims, time.Second)
	}
	return errors.New("processes keep appearing")
}

// killProc sends SIGKILL through a pidfd after checking that the pid still
// names the same process (never a reused pid).
func killProc(p procID) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if start, _, _, ok := procStat(p.pid); !ok || start != p.start {
		return
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}

// waitGone waits (at most d) until the processes are dead (gone or
// zombies).
func waitGone(ctx context.Context, procs []procID, d time.Duration) {
	deadline := time.Now().Add(d)
	for _, p := range procs {
		for time.Now().Before(deadline) {
			start, _, state, ok := procStat(p.pid)
			if !ok || start != p.start || state == 'Z' || state == 'X' {
				break
			}
			if sleepCtx(ctx, time.Millisecond) != nil {
				return
			}
		}
	}
}

// readRegular is ReadFile in the direct mode: no symlink followed, the
// type checked on an O_PATH descriptor before anything is opened for
// reading.
func (r *directRoot) readRegular(p string, max int64, tail bool) ([]byte, error) {
	root, err := r.open()
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	var fd int
	for {
		fd, err = unix.Openat2(root, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS})
		if err != unix.EINTR && err != unix.EAGAIN {
			break
		}
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("read %s: %w", p, sandbox.ErrNotFound)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EXDEV):
		return nil, fmt.Errorf("read %s: a symlink or non-directory on the path: %w", p, sandbox.ErrNotRegular)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("read %s: a %s: %w", p, fileType(st.Mode), sandbox.ErrNotRegular)
	}
	// Reopen the very inode (now known to be a regular file) for reading.
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	f := os.NewFile(uintptr(rfd), p)
	defer f.Close()
	var st2 unix.Stat_t
	if err := unix.Fstat(rfd, &st2); err != nil || st2.Ino != st.Ino || st2.Dev != st.Dev {
		return nil, fmt.Errorf("read %s: the file changed while opened", p)
	}
	if tail && st2.Size > max {
		if _, err := f.Seek(st2.Size-max, io.SeekStart); err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return data, nil
}

// fileType names the type of a stat mode.
func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return fmt.Sprintf("file of type %#o", mode&unix.S_IFMT)
}

// resetDir is ResetDir in the direct mode: whatever is at dir is removed
// without following symlinks, dir is created exclusively, then the files
// are written as upload does.
func (r *directRoot) resetDir(dir string, mode fs.FileMode, files []bundle.Entry) error {
	dir = path.Clean(dir)
	if !path.IsAbs(dir) || dir == "/" {
		return fmt.Errorf("reset %q: not an absolute directory below /", dir)
	}
	root, err := r.open()
	if err != nil {
		return err
	}
	defer unix.Close(root)
	parent, err := realParents(root, path.Dir(dir))
	if err != nil {
		return fmt.Errorf("reset %s: %w", dir, err)
	}
	defer unix.Close(parent)
	base := path.Base(dir)
	if err := removeAt(parent, base); err != nil {
		return fmt.Errorf("reset %s: remove: %w", dir, err)
	}
	if err := unix.Mkdirat(parent, base, uint32(mode.Perm())); err != nil {
		return fmt.Errorf("reset %s: %w", dir, err) // EEXIST too: never merge
	}
	if err := fixDirAttrs(parent, base, uint32(mode.Perm())); err != nil {
		return fmt.Errorf("reset %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil
	}
	return r.upload(dir, files)
}

// realParents opens the directory p below root, walking it one component
// at a time without following symlinks: a missing component is created
// (0755, root's), and one that is not a directory (a symlink, file, FIFO)
// is removed and replaced by one, so the sandbox cannot redirect or block
// what is created below p.
func realParents(root int, p string) (int, error) {
	cur, err := unix.Openat(root, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, part := range strings.Split(strings.Trim(path.Clean(p), "/"), "/") {
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			unix.Close(cur)
			return -1, fmt.Errorf("%q has a .. component", p)
		}
		next, err := unix.Openat(cur, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				if rerr := removeAt(cur, part); rerr != nil {
					unix.Close(cur)
					return -1, rerr
				}
			}
			if err := unix.Mkdirat(cur, part, 0o755); err != nil {
				unix.Close(cur)
				return -1, err
			}
			if err := fixDirAttrs(cur, part, 0o755); err != nil {
				unix.Close(cur)
				return -1, err
			}
			next, err = unix.Openat(cur, part, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				unix.Close(cur)
				return -1, err
			}
		}
		unix.Close(cur)
		cur = next
	}
	return cur, nil
}

// removeAt removes name below the directory parent, recursively, never
// following a symlink. A missing name is no error.
func removeAt(parent int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(parent, name, 0)
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if err := removeAt(fd, n); err != nil {
				return err
			}
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return err
		}
	}
	return unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
}

// noRoutes counts the container's network attempts that cannot have
// worked offline (sandbox.NetNamespaceAttempts), after checking that the
// process is still the container's init.
func (r *directRoot) noRoutes() (uint64, error) {
	root, err := r.open()
	if err != nil {
		return 0, err
	}
	unix.Close(root)
	return sandbox.NetNamespaceAttempts(r.pid)
}
