package docker

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// directRoot reaches the filesystem of a container on this host through
// its init process's root, /proc/PID/root. Every path is resolved inside
// that root by openat2(RESOLVE_IN_ROOT), so no symlink or ".." planted in
// the sandbox leads out of it, and each operation first checks that PID
// still belongs to the container (its cgroup names the container ID).
//
// The engine's archive endpoints cost about as much as a container start
// on a small host (the engine re-executes itself to extract in a chroot);
// these calls cost microseconds. Docker uses it only when the engine runs
// on this host without user-namespace remapping and this process is root
// (see directFiles); everything else goes through the engine.
type directRoot struct {
	pid int
	id  string
}

// errNotDirect means the container cannot be reached directly (any more);
// the caller falls back to the engine.
var errNotDirect = errors.New("container not reachable through /proc")

// open returns an O_PATH descriptor of the container's root after checking
// that the process is still the container's.
func (r *directRoot) open() (int, error) {
	proc := "/proc/" + strconv.Itoa(r.pid)
	cg, err := os.ReadFile(proc + "/cgroup")
	if err != nil || !bytes.Contains(cg, []byte(r.id)) {
		return -1, errNotDirect
	}
	fd, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errNotDirect
	}
	return fd, nil
}

// resolve is the resolution every lookup uses: inside the root, no
// /proc magic links.
const resolve = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// openIn opens p (absolute in the container) below root.
func openIn(root int, p string, flags uint64, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat2(root, p, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: uint64(mode), Resolve: resolve})
		if err == unix.EINTR || err == unix.EAGAIN { // EAGAIN: a rename raced the lookup
			continue
		}
		return fd, err
	}
}

// readFile is Download: the regular file at p (symlinks followed inside
// the root), at most max bytes.
func (r *directRoot) readFile(p string, max int64) ([]byte, error) {
	root, err := r.open()
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	fd, err := openIn(root, p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("download %s: %w", p, sandbox.ErrNotFound)
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("download: too many symlinks from %s", p)
	case err != nil:
		return nil, fmt.Errorf("download %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", p, err)
	}
	switch {
	case st.IsDir():
		return nil, fmt.Errorf("download %s: is a directory: %w", p, errNotRegular)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("download %s: %s: %w", p, st.Mode().Type(), errNotRegular)
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", p, err)
	}
	return data, nil
}

// upload is Upload: dir is created like mkdir -p (0755), then the files
// below it, owned by root, modes kept, missing parents 0755, times at the
// epoch like the archive the engine path extracts.
func (r *directRoot) upload(dir string, files []bundle.Entry) error {
	root, err := r.open()
	if err != nil {
		return err
	}
	defer unix.Close(root)
	if err := mkdirAll(root, dir); err != nil {
		return fmt.Errorf("upload: %s: %w", dir, err)
	}
	dirs := map[string]bool{} // below dir: their times are set last, like an extracting tar's
	for _, f := range files {
		name := path.Clean(strings.TrimPrefix(f.Name, "/"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("upload: bad member name %q", f.Name)
		}
		full := path.Join(dir, name)
		if err := mkdirAll(root, path.Dir(full)); err != nil {
			return fmt.Errorf("upload: %s: %w", path.Dir(full), err)
		}
		if err := writeEntry(root, dir, full, f); err != nil {
			return fmt.Errorf("upload %s: %w", full, err)
		}
		if f.Kind == bundle.KindDir {
			dirs[name] = true
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		fd, err := openIn(root, path.Join(dir, d), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("upload %s: %w", path.Join(dir, d), err)
		}
		err = unix.Futimes(fd, []unix.Timeval{{}, {}})
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("upload %s: %w", path.Join(dir, d), err)
		}
	}
	return nil
}

// mkdirAll creates the missing directories of p (0755, root), like mkdir -p.
func mkdirAll(root int, p string) error {
	cur := "/"
	for _, part := range strings.Split(strings.Trim(path.Clean(p), "/"), "/") {
		if part == "" {
			continue
		}
		parent, err := openIn(root, cur, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(parent, part, 0o755)
		if err == nil {
			err = fixDirAttrs(parent, part, 0o755)
		} else if errors.Is(err, unix.EEXIST) {
			err = nil // a directory, or a symlink to one: checked by the next open
		}
		unix.Close(parent)
		if err != nil {
			return err
		}
		cur = path.Join(cur, part)
	}
	fd, err := openIn(root, cur, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return fmt.Errorf("not a directory: %w", err)
	}
	return unix.Close(fd)
}

// writeEntry creates one member at full (its parent exists), replacing a
// file or symlink already there. Attributes are set through descriptors
// (or on the link itself), never by a path that a process still running
// in the sandbox could swap for a symlink.
func writeEntry(root int, dir, full string, f bundle.Entry) error {
	parent, err := openIn(root, path.Dir(full), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	base := path.Base(full)
	mode := uint32(f.Mode.Perm())
	switch f.Kind {
	case bundle.KindDir:
		if err := unix.Mkdirat(parent, base, mode); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		return fixDirAttrs(parent, base, mode)
	case bundle.KindSymlink:
		unlinkNonDir(parent, base)
		if err := unix.Symlinkat(f.Linkname, parent, base); err != nil {
			return err
		}
		if err := unix.Fchownat(parent, base, 0, 0, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		return unix.UtimesNanoAt(parent, base, []unix.Timespec{{}, {}}, unix.AT_SYMLINK_NOFOLLOW)
	case bundle.KindHardlink:
		// A hard link names its target relative to the upload directory,
		// as in the archive the engine path extracts there.
		target := path.Join(dir, path.Clean("/"+f.Linkname))
		src, err := openIn(root, path.Dir(target), unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(src)
		unlinkNonDir(parent, base)
		return unix.Linkat(src, path.Base(target), parent, base, 0)
	case bundle.KindFile:
		unlinkNonDir(parent, base)
		fd, err := unix.Openat(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		out := os.NewFile(uintptr(fd), full)
		err = copyEntry(out, f)
		if err == nil {
			err = fixAttrs(fd, mode)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return fmt.Errorf("unsupported member kind %s", f.Kind)
}

// unlinkNonDir removes a file or symlink in the way (tar extraction
// replaces them too).
func unlinkNonDir(parent int, base string) {
	var st unix.Stat_t
	if unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		_ = unix.Unlinkat(parent, base, 0)
	}
}

// fixAttrs makes an open file or directory root's, with the exact mode
// (no umask) and the epoch as its times.
func fixAttrs(fd int, mode uint32) error {
	if err := unix.Fchown(fd, 0, 0); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	return unix.Futimes(fd, []unix.Timeval{{}, {}})
}

// fixDirAttrs is fixAttrs for the directory base of parent, opened without
// following a symlink.
func fixDirAttrs(parent int, base string, mode uint32) error {
	fd, err := unix.Openat(parent, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fixAttrs(fd, mode)
}
