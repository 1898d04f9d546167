package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/bundle"
)

// The agent's work, carried to a separate verifier sandbox
// (--verifier-sandbox separate).
//
// The rule (WorkPath): what the agent changed since Start below its
// working directories is carried, nothing else. The work roots are the
// sandbox's workdir (the task's, else the image's WORKDIR), /app, /home,
// /root and /tmp: where Harbor tasks keep and check an agent's output.
// Never carried, even when a root lies below them: the system paths
// (SystemPaths: /usr, /bin, /sbin, /lib*, /etc, /opt, /var, /boot, /run,
// /srv, /mnt, /media, /proc, /sys, /dev) and otcurate's own (/logs, /tests,
// /solution); nor the dot-entries at the top of a home directory (/root/.*,
// /home/USER/.*), where ~/.local holds the user site-packages python3
// imports at startup and ~/.config, ~/.bashrc or ~/.profile configure
// the tools a verifier runs. Regular files, directories and symlinks (as
// links, never followed) are carried with their modes and owners;
// deletions of files the image had are replayed; FIFOs, sockets and
// devices are not carried (Work.Skipped). A workdir below a system path
// is not carried at all (Work.Skipped says so).
//
// What a separate verifier sandbox guarantees: test.sh runs with the
// image's own bash, python3, pytest and libraries, untouched by the
// agent, and no process, file or setting the agent left outside its work
// is there. What it cannot: the work itself is the agent's, so a verifier
// that executes it, imports it (a conftest.py or a module shadowing a
// library in a carried directory the verifier puts on its path), or puts
// a carried directory on PATH still runs the agent's code. And an agent
// whose solution needs packages it installed into system paths fails
// there: the task image must hold what the verifier needs.

// SystemPaths are never carried as the agent's work.
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/var",
	"/boot", "/run", "/srv", "/mnt", "/media", "/proc", "/sys", "/dev", "/logs", "/tests", "/solution"}

// WorkRoots are the directories whose changes are carried, besides the
// sandbox's workdir.
var WorkRoots = []string{"/app", "/home", "/root", "/tmp"}

// Limits on the work carried: past them the work is not carried
// (*WorkTooLargeError), which scores the attempt 0.
const (
	MaxWorkEntries = 50000
	MaxWorkBytes   = 512 << 20
)

// WorkTooLargeError is work past MaxWorkEntries or MaxWorkBytes: the
// agent's doing, never an infrastructure failure.
type WorkTooLargeError struct {
	Entries, Bytes int64
	Depth          int // a path this many components deep (past MaxWorkDepth)
}

func (e *WorkTooLargeError) Error() string {
	if e.Depth > 0 {
		return fmt.Sprintf("the agent's work holds a path %d components deep, past the %d the verifier sandbox carries", e.Depth, MaxWorkDepth)
	}
	return fmt.Sprintf("the agent's work is too large to carry to the verifier sandbox (at least %d entries, %d bytes; limits %d and %d)",
		e.Entries, e.Bytes, MaxWorkEntries, MaxWorkBytes)
}

// Work is what the agent changed in its working directories.
type Work struct {
	Workdir string
	// Entries are the changed directories, regular files and symlinks,
	// names relative to "/", parents before children.
	Entries []bundle.Entry
	// Owners are the uid:gid of entries not owned by root:root.
	Owners map[string][2]int
	// Deleted are absolute paths the image had and the agent removed
	// (the topmost of a removed tree).
	Deleted []string
	// Skipped are changed paths not carried, with the reason.
	Skipped []string
}

// WorkCollector is implemented by sandboxes that can list the agent's
// work (the Docker and fake backends; Kubernetes and Daytona cannot yet,
// and a separate verifier sandbox is refused on them).
type WorkCollector interface {
	// Work collects what changed since Start under the work rule
	// (WorkPath). Call it after KillAll: nothing may still be writing.
	Work(ctx context.Context) (Work, error)
}

// ErrWorkUnsupported is a separate verifier sandbox asked of a backend
// whose sandboxes cannot collect the agent's work.
var ErrWorkUnsupported = errors.New("--verifier-sandbox separate is not supported by this backend (its sandboxes cannot list the agent's work); use the Docker backend or --verifier-sandbox shared")

// CollectWork is sb's Work, ErrWorkUnsupported when sb cannot collect it.
func CollectWork(ctx context.Context, sb Sandbox) (Work, error) {
	c, ok := sb.(WorkCollector)
	if !ok {
		return Work{}, ErrWorkUnsupported
	}
	return c.Work(ctx)
}

// under reports whether p is dir or below it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// SystemPath reports whether p is a system path (never carried).
func SystemPath(p string) bool {
	p = path.Clean(p)
	for _, s := range SystemPaths {
		if under(p, s) {
			return true
		}
	}
	return false
}

// homeDot reports whether p is a home directory's dot-entry or below one.
func homeDot(p string) bool {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	return parts[0] == "root" && len(parts) > 1 && strings.HasPrefix(parts[1], ".") ||
		parts[0] == "home" && len(parts) > 2 && strings.HasPrefix(parts[2], ".")
}

// WorkPath reports whether the absolute path p is carried as the agent's
// work for a sandbox whose workdir is workdir (the rule above).
func WorkPath(p, workdir string) bool {
	p = path.Clean(p)
	if !path.IsAbs(p) || p == "/" || SystemPath(p) {
		return false
	}
	if homeDot(p) { // dot-entries at the top of a home directory configure the tools
		return false
	}
	roots := WorkRoots
	if wd := path.Clean(workdir); path.IsAbs(wd) && wd != "/" {
		roots = append([]string{wd}, roots...)
	}
	for _, r := range roots {
		if under(p, r) {
			return true
		}
	}
	return false
}

// WorkReader reads changed paths of a sandbox's filesystem from the host,
// below a root directory descriptor (the sandbox's /proc/PID/root), with
// no symlink followed in any component and nothing but a regular file
// opened for reading.
type WorkReader struct {
	Root    int // O_PATH descriptor of the sandbox's root
	Workdir string
	// All carries every changed path but otcurate's own and the kernel's
	// (ChangePath) instead of the work rule: the fresh verifier sandbox,
	// whose trust rule (TrustFilter) then decides what is applied.
	All   bool
	work  Work
	bytes int64
}

// carries reports whether the reader records p.
func (w *WorkReader) carries(p string) bool {
	if w.All {
		return ChangePath(p)
	}
	return WorkPath(p, w.Workdir)
}

// OwnPaths are never carried in the fresh mode: the kernel's file
// systems and the verifier's own directories, which a verifier sandbox
// makes afresh. The agent's logs (/logs/agent, /logs/artifacts) are
// carried: Harbor verifiers may read them.
var OwnPaths = []string{"/proc", "/sys", "/dev", "/logs/verifier", "/tests", "/solution"}

// ChangePath reports whether p is a change the fresh verifier sandbox
// considers at all (everything but OwnPaths, "/" and /logs itself).
func ChangePath(p string) bool {
	p = path.Clean(p)
	if !path.IsAbs(p) || p == "/" || p == "/logs" {
		return false
	}
	for _, o := range OwnPaths {
		if under(p, o) {
			return false
		}
	}
	return !strings.HasPrefix(p, "/tmp/.otcurate-")
}

// Add records the changed path p (absolute) if the rule carries it.
// Missing paths are ignored (the change was undone).
func (w *WorkReader) Add(p string) error {
	p = path.Clean(p)
	if !w.carries(p) {
		return nil
	}
	if int64(len(w.work.Entries)) >= MaxWorkEntries || w.bytes > MaxWorkBytes {
		return &WorkTooLargeError{Entries: int64(len(w.work.Entries)), Bytes: w.bytes}
	}
	parent, err := OpenNoFollow(w.Root, path.Dir(p), unix.O_PATH|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil { // a symlink on the way: the link itself is carried
		w.work.Skipped = append(w.work.Skipped, p+": a symlink or non-directory on its path")
		return nil
	}
	defer unix.Close(parent)
	base := path.Base(p)
	var st unix.Stat_t
	if err := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("work: stat %s: %w", p, err)
	}
	e := bundle.Entry{Name: strings.TrimPrefix(p, "/"), Mode: fs.FileMode(st.Mode & 0o777)}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if !w.All && w.isRoot(p) { // the image's own (a sticky /tmp stays sticky)
			return nil
		}
		e.Kind = bundle.KindDir
	case unix.S_IFLNK:
		target, err := readLinkAt(parent, base)
		if err != nil {
			return fmt.Errorf("work: readlink %s: %w", p, err)
		}
		e.Kind, e.Linkname = bundle.KindSymlink, target
	case unix.S_IFREG:
		if st.Size > MaxWorkBytes-w.bytes {
			return &WorkTooLargeError{Entries: int64(len(w.work.Entries)), Bytes: w.bytes + st.Size}
		}
		fd, err := unix.Openat(parent, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("work: open %s: %w", p, err)
		}
		f := os.NewFile(uintptr(fd), p)
		var st2 unix.Stat_t
		if err := unix.Fstat(fd, &st2); err != nil || st2.Ino != st.Ino || st2.Mode&unix.S_IFMT != unix.S_IFREG {
			f.Close()
			return fmt.Errorf("work: %s changed while read", p)
		}
		data, err := io.ReadAll(io.LimitReader(f, MaxWorkBytes-w.bytes+1))
		f.Close()
		if err != nil {
			return fmt.Errorf("work: read %s: %w", p, err)
		}
		w.bytes += int64(len(data))
		if w.bytes > MaxWorkBytes {
			return &WorkTooLargeError{Entries: int64(len(w.work.Entries)), Bytes: w.bytes}
		}
		e.Kind, e.Data, e.Size = bundle.KindFile, data, int64(len(data))
	default:
		w.work.Skipped = append(w.work.Skipped, p+": not a regular file, directory or symlink")
		return nil
	}
	if st.Uid != 0 || st.Gid != 0 {
		if w.work.Owners == nil {
			w.work.Owners = map[string][2]int{}
		}
		w.work.Owners[e.Name] = [2]int{int(st.Uid), int(st.Gid)}
	}
	w.work.Entries = append(w.work.Entries, e)
	return nil
}

// isRoot reports whether p is a work root itself.
func (w *WorkReader) isRoot(p string) bool {
	if p == path.Clean(w.Workdir) {
		return true
	}
	for _, r := range WorkRoots {
		if p == r {
			return true
		}
	}
	return false
}

// Delete records that p (absolute), which the image had, was removed.
func (w *WorkReader) Delete(p string) {
	p = path.Clean(p)
	if w.carries(p) {
		w.work.Deleted = append(w.work.Deleted, p)
	}
}

// Work is what was recorded: entries sorted parents first, deletions
// reduced to the topmost of each removed tree.
func (w *WorkReader) Work() Work {
	out := w.work
	out.Workdir = w.Workdir
	if wd := path.Clean(w.Workdir); !w.All && wd != "/" && wd != "." && SystemPath(wd) {
		out.Skipped = append(out.Skipped, wd+": the workdir is below a system path and is not carried")
	}
	sort.Slice(out.Entries, func(i, j int) bool { return out.Entries[i].Name < out.Entries[j].Name })
	sort.Strings(out.Deleted)
	var del []string
	for _, d := range out.Deleted {
		if n := len(del); n > 0 && under(d, del[n-1]) {
			continue
		}
		del = append(del, d)
	}
	out.Deleted = del
	return out
}

// OpenNoFollow opens p below root with no symlink followed.
func OpenNoFollow(root int, p string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(root, p, &unix.OpenHow{Flags: flags | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS})
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// ApplyWork carries w into sb, a fresh sandbox from the same image:
// deletions first (and whatever stands where a changed entry goes that is
// not of its kind: a directory where a file goes), then the entries, then
// their owners. It runs the fresh sandbox's own rm and chown as root, not
// anything of the agent's.
func ApplyWork(ctx context.Context, sb Sandbox, w Work) error {
	if len(w.Deleted) > 0 || len(w.Entries) > 0 {
		var script strings.Builder
		script.WriteString("set -e\n")
		for _, d := range w.Deleted {
			fmt.Fprintf(&script, "rm -rf -- %s\n", ShellQuote(d))
		}
		for _, e := range w.Entries {
			p := ShellQuote("/" + e.Name)
			if e.Kind == bundle.KindDir { // a symlink or file where a directory goes
				fmt.Fprintf(&script, "if [ -L %[1]s ] || { [ -e %[1]s ] && [ ! -d %[1]s ]; }; then rm -f -- %[1]s; fi\n", p)
			} else { // a directory where a file or symlink goes
				fmt.Fprintf(&script, "if [ -d %[1]s ] && [ ! -L %[1]s ]; then rm -rf -- %[1]s; fi\n", p)
			}
		}
		if err := runScriptFile(ctx, sb, script.String()); err != nil {
			return fmt.Errorf("apply the agent's deletions: %w", err)
		}
	}
	if len(w.Entries) > 0 {
		if err := sb.Upload(ctx, "/", w.Entries); err != nil {
			return fmt.Errorf("apply the agent's work: %w", err)
		}
	}
	if len(w.Owners) > 0 {
		names := make([]string, 0, len(w.Owners))
		for n := range w.Owners {
			names = append(names, n)
		}
		sort.Strings(names)
		var script strings.Builder
		script.WriteString("set -e\n")
		for _, n := range names {
			o := w.Owners[n]
			fmt.Fprintf(&script, "chown -h %d:%d -- %s\n", o[0], o[1], ShellQuote("/"+n))
		}
		if err := runScriptFile(ctx, sb, script.String()); err != nil {
			return fmt.Errorf("apply the agent's file owners: %w", err)
		}
	}
	return nil
}

// runScriptFile uploads script to a fresh random path and runs it as root
// with the image's sh (a file, so no command line grows past ARG_MAX).
func runScriptFile(ctx context.Context, sb Sandbox, script string) error {
	dir := "/tmp/.otcurate-apply-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := sb.Upload(ctx, dir, []bundle.Entry{{Name: "apply.sh", Kind: bundle.KindFile, Mode: 0o700, Data: []byte(script), Size: int64(len(script))}}); err != nil {
		return err
	}
	res, err := sb.Exec(ctx, ExecRequest{Cmd: "sh " + dir + "/apply.sh; rc=$?; rm -rf -- " + dir + "; exit $rc", User: "root", Timeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// Stamp identifies one state of a file: a change of content, mode, owner
// or kind changes its ctime (which no process can set back) or inode.
type Stamp struct {
	Ino, Ctime, Mtime int64
	Mode              uint32
}

// Snapshot is the state of the work roots at a moment, for a backend
// with no engine diff (the fake): DiffWork against a later Snapshot is
// the agent's work.
type Snapshot map[string]Stamp

// TakeSnapshot walks the work roots below root (no symlink followed),
// recording every entry the rule carries. Past MaxWorkEntries it fails.
func TakeSnapshot(root int, workdir string) (Snapshot, error) {
	snap := Snapshot{}
	err := WalkWork(root, workdir, func(p string, st *unix.Stat_t) error {
		if len(snap) >= MaxWorkEntries {
			return &WorkTooLargeError{Entries: int64(len(snap))}
		}
		snap[p] = Stamp{Ino: int64(st.Ino), Ctime: st.Ctim.Nano(), Mtime: st.Mtim.Nano(), Mode: st.Mode}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return snap, nil
}

// WalkWork calls fn for every entry below root (a directory descriptor)
// that the work rule carries for workdir, parents before children, with
// no symlink followed. Missing roots are skipped.
func WalkWork(root int, workdir string, fn func(p string, st *unix.Stat_t) error) error {
	roots := WorkRoots
	if wd := path.Clean(workdir); path.IsAbs(wd) && wd != "/" && !SystemPath(wd) {
		roots = append([]string{wd}, roots...)
	}
	seen := map[string]bool{}
	for _, r := range roots {
		if err := walkNoFollow(root, r, workdir, seen, fn); err != nil {
			return err
		}
	}
	return nil
}

// walkNoFollow visits p and, when it is a directory, what is below it.
func walkNoFollow(root int, p, workdir string, seen map[string]bool, fn func(string, *unix.Stat_t) error) error {
	if seen[p] {
		return nil
	}
	seen[p] = true
	fd, err := OpenNoFollow(root, p, unix.O_PATH)
	if err != nil {
		return nil // missing, or a symlink on the way
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if err != nil {
		return nil
	}
	if err := fn(p, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	dfd, err := OpenNoFollow(root, p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil
	}
	d := os.NewFile(uintptr(dfd), p)
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil
	}
	for _, n := range names {
		c := path.Join(p, n)
		if !WorkPath(c, workdir) {
			continue
		}
		if err := walkNoFollow(root, c, workdir, seen, fn); err != nil {
			return err
		}
	}
	return nil
}

// DiffWork records into w what differs from before to after: new or
// changed entries added, vanished ones deleted.
func DiffWork(w *WorkReader, before, after Snapshot) error {
	paths := make([]string, 0, len(after))
	for p := range after {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if b, ok := before[p]; ok && b == after[p] {
			continue
		}
		if err := w.Add(p); err != nil {
			return err
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			w.Delete(p)
		}
	}
	return nil
}

// WorkBackend is implemented by backends that can tell, before any
// sandbox starts, whether their sandboxes collect work.
type WorkBackend interface {
	// CollectsWork is nil when every sandbox of the backend is a
	// WorkCollector that works here, else why not (wrapping
	// ErrWorkUnsupported).
	CollectsWork() error
}

// CheckWork is what a command checks at startup for
// --verifier-sandbox separate: nil when b's sandboxes collect work, else
// an error wrapping ErrWorkUnsupported (a backend that does not say is
// taken to be unable).
func CheckWork(b Backend) error {
	if wb, ok := b.(WorkBackend); ok {
		return wb.CollectsWork()
	}
	return ErrWorkUnsupported
}

// readLinkAt is the target of the symlink name below dirfd ("" with an
// O_PATH descriptor of the link itself).
func readLinkAt(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
