package fake

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/bundle"
)

// The sandbox's files are reached from the host through its init's root,
// /proc/PID/root. Every path is resolved inside that root with
// openat2(RESOLVE_IN_ROOT), so a symlink or ".." planted in the sandbox
// does not lead out of it (the same scheme as the Docker backend's direct
// file access).

// errNotFoundIn is a missing path inside a root.
var errNotFoundIn = errors.New("not found")

// errNotRegular is a download of something that is not a regular file.
var errNotRegular = errors.New("not a regular file")

const resolveInRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// openRoot opens the container's root directory, then checks that the
// PID still is its init and the root is not the host's (so a PID reused
// after the init died cannot lead to another root).
func openRoot(c *container) (int, error) {
	fd, err := unix.Open(c.root(), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open sandbox root: %w", errStopped)
	}
	if err := c.checkRoot(fd); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// openIn opens p (absolute inside the root) below the root descriptor.
func openIn(root int, p string, flags uint64, mode uint32) (int, error) {
	for {
		fd, err := unix.Openat2(root, p, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Mode: uint64(mode), Resolve: resolveInRoot})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// statIn stats p inside the root, following symlinks inside it.
func statIn(c *container, p string) (fs.FileInfo, error) {
	root, err := openRoot(c)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	fd, err := openIn(root, p, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	return f.Stat()
}

// readFileIn reads the regular file at p inside the root, at most max
// bytes. A missing file is errNotFoundIn.
func readFileIn(c *container, p string, max int64) ([]byte, error) {
	root, err := openRoot(c)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	fd, err := openIn(root, p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return nil, fmt.Errorf("%s: %w", p, errNotFoundIn)
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("too many symlinks from %s", p)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	switch {
	case st.IsDir():
		return nil, fmt.Errorf("%s: is a directory: %w", p, errNotRegular)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %s: %w", p, st.Mode().Type(), errNotRegular)
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return data, nil
}

// owner is who uploaded files belong to.
type owner struct{ uid, gid int }

// uploadIn creates dir (like mkdir -p, 0755) and the files below it, owned
// by o, modes kept, missing parents 0755, times at the epoch (like the
// archive the Docker engine extracts).
func uploadIn(c *container, dir string, files []bundle.Entry, o owner) error {
	root, err := openRoot(c)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	if err := mkdirAllIn(root, dir, o); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	dirs := map[string]bool{}
	for _, f := range files {
		name := path.Clean(strings.TrimPrefix(f.Name, "/"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("bad member name %q", f.Name)
		}
		full := path.Join(dir, name)
		if err := mkdirAllIn(root, path.Dir(full), o); err != nil {
			return fmt.Errorf("%s: %w", path.Dir(full), err)
		}
		if err := writeEntry(root, dir, full, f, o); err != nil {
			return fmt.Errorf("%s: %w", full, err)
		}
		if f.Kind == bundle.KindDir {
			dirs[name] = true
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs { // last, as an extracting tar does
		fd, err := openIn(root, path.Join(dir, d), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", path.Join(dir, d), err)
		}
		err = unix.Futimes(fd, []unix.Timeval{{}, {}})
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("%s: %w", path.Join(dir, d), err)
		}
	}
	return nil
}

// mkdirAllIn creates the missing directories of p (0755, owned by o).
func mkdirAllIn(root int, p string, o owner) error {
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
			err = fixDirAttrs(parent, part, 0o755, o)
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
// file or symlink already there. Attributes are set through descriptors,
// never by a path a sandboxed process could swap for a symlink.
func writeEntry(root int, dir, full string, f bundle.Entry, o owner) error {
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
		return fixDirAttrs(parent, base, mode, o)
	case bundle.KindSymlink:
		unlinkNonDir(parent, base)
		if err := unix.Symlinkat(f.Linkname, parent, base); err != nil {
			return err
		}
		if err := unix.Fchownat(parent, base, o.uid, o.gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		return unix.UtimesNanoAt(parent, base, []unix.Timespec{{}, {}}, unix.AT_SYMLINK_NOFOLLOW)
	case bundle.KindHardlink:
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
			err = fixAttrs(fd, mode, o)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return fmt.Errorf("unsupported member kind %s", f.Kind)
}

// copyEntry writes a file entry's content: its Data, or f.Size bytes of
// what Open gives.
func copyEntry(w io.Writer, f bundle.Entry) error {
	if f.Open == nil {
		_, err := w.Write(f.Data)
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.CopyN(w, rc, f.Size)
	return err
}

// unlinkNonDir removes a file or symlink in the way.
func unlinkNonDir(parent int, base string) {
	var st unix.Stat_t
	if unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		_ = unix.Unlinkat(parent, base, 0)
	}
}

// fixAttrs sets an open file's owner, exact mode (no umask) and epoch times.
func fixAttrs(fd int, mode uint32, o owner) error {
	if err := unix.Fchown(fd, o.uid, o.gid); err != nil {
		return err
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	return unix.Futimes(fd, []unix.Timeval{{}, {}})
}

// fixDirAttrs is fixAttrs for the directory base of parent (no symlink
// followed).
func fixDirAttrs(parent int, base string, mode uint32, o owner) error {
	fd, err := unix.Openat(parent, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fixAttrs(fd, mode, o)
}
