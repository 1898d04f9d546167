//go:build unix

package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is an open directory below which names are resolved. Its methods
// take slash-separated relative names; none follows a symlink.
type Dir struct {
	fd   int
	name string
	walk bool // openat2 is unavailable: resolve one component at a time
}

// Open opens the directory dir (following symlinks in dir itself, which
// is the caller's choice) for use as the root of later names.
func Open(dir string) (*Dir, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	d := &Dir{fd: fd, name: dir}
	d.walk = !haveOpenat2(fd)
	return d, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Name returns the path Dir was opened with.
func (d *Dir) Name() string { return d.name }

func (d *Dir) pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: filepath.Join(d.name, filepath.FromSlash(name)), Err: err}
}

// openDir opens the directory name (clean; "." is d itself) below d.
func (d *Dir) openDir(name string) (int, error) {
	if name == "." {
		return unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if !d.walk {
		fd, err := openat2Beneath(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ELOOP):
			return -1, ErrSymlink
		case !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM):
			return -1, err
		}
		// EAGAIN: a rename raced the lookup; the walk does not care.
	}
	return d.walkDir(name, false, 0)
}

// walkDir opens name one component at a time with O_NOFOLLOW, creating
// missing components with perm when create is set.
func (d *Dir) walkDir(name string, create bool, perm fs.FileMode) (int, error) {
	cur, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for name != "" {
		var part string
		part, name, _ = strings.Cut(name, "/")
		if create {
			if err := unix.Mkdirat(cur, part, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(cur)
				return -1, err
			}
		}
		next, err := unix.Openat(cur, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			err = linkErr(cur, part, err)
			unix.Close(cur)
			return -1, err
		}
		unix.Close(cur)
		cur = next
	}
	return cur, nil
}

// linkErr turns the error of an O_NOFOLLOW open into ErrSymlink when the
// name is a symlink (Linux says ELOOP, some systems ENOTDIR or EMLINK).
func linkErr(dirfd int, name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) || errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return ErrSymlink
		}
	}
	return err
}

// parent opens the directory holding name and returns it with the last
// element; name must not be ".".
func (d *Dir) parent(op, name string) (int, string, string, error) {
	c, err := clean(name)
	if err != nil {
		return -1, "", "", err
	}
	if c == "." {
		return -1, "", "", d.pathErr(op, name, ErrOutside)
	}
	dir, base := split(c)
	fd, err := d.openDir(dir)
	if err != nil {
		return -1, "", "", d.pathErr(op, c, err)
	}
	return fd, base, c, nil
}

// Mkdir creates the directory name; its parent must exist.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	pfd, base, c, err := d.parent("mkdir", name)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, base, uint32(perm.Perm())); err != nil {
		return d.pathErr("mkdir", c, err)
	}
	return nil
}

// MkdirAll creates the directory name and any missing parents. An
// existing component that is a symlink is an error, never followed.
func (d *Dir) MkdirAll(name string, perm fs.FileMode) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	if c == "." {
		return nil
	}
	if fd, err := d.openDir(c); err == nil { // the usual case: it exists
		return unix.Close(fd)
	}
	fd, err := d.walkDir(c, true, perm)
	if err != nil {
		return d.pathErr("mkdir", c, err)
	}
	return unix.Close(fd)
}

// Create creates the regular file name, which must not exist (O_EXCL:
// not even as a symlink), for writing.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	return d.openFile("create", name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, perm)
}

// Open opens the existing file name for reading; it must not be a symlink.
func (d *Dir) Open(name string) (*os.File, error) {
	return d.openFile("open", name, unix.O_RDONLY, 0)
}

func (d *Dir) openFile(op, name string, flags int, perm fs.FileMode) (*os.File, error) {
	pfd, base, c, err := d.parent(op, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	if flags&unix.O_CREAT == 0 {
		// Look before opening: opening a device node can have effects;
		// O_NONBLOCK below covers one swapped in meanwhile (a FIFO).
		var st unix.Stat_t
		if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, d.pathErr(op, c, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
		case unix.S_IFLNK:
			return nil, d.pathErr(op, c, ErrSymlink)
		default:
			return nil, d.pathErr(op, c, errors.New("not a regular file"))
		}
	}
	if flags&unix.O_CREAT != 0 { // O_EXCL: a new regular file, never a link
		fd, err := unix.Openat(pfd, base, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != nil {
			return nil, d.pathErr(op, c, linkErr(pfd, base, err))
		}
		return os.NewFile(uintptr(fd), filepath.Join(d.name, filepath.FromSlash(c))), nil
	}
	fd, err := unix.Openat(pfd, base, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, d.pathErr(op, c, linkErr(pfd, base, err))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = errors.New("not a regular file")
		}
		return nil, d.pathErr(op, c, err)
	}
	// O_NONBLOCK only kept a FIFO from blocking the open; files ignore it,
	// but clear it so the *os.File behaves as usual.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, d.pathErr(op, c, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.name, filepath.FromSlash(c))), nil
}

// Symlink creates name as a symlink to target. The target is stored as
// given: this package never follows it.
func (d *Dir) Symlink(target, name string) error {
	pfd, base, c, err := d.parent("symlink", name)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Symlinkat(target, pfd, base); err != nil {
		return d.pathErr("symlink", c, err)
	}
	return nil
}

// ChmodDir sets the permission bits of the directory name ("." is d).
func (d *Dir) ChmodDir(name string, mode fs.FileMode) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	fd, err := d.openDir(c)
	if err != nil {
		return d.pathErr("chmod", c, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, uint32(mode.Perm())); err != nil {
		return d.pathErr("chmod", c, err)
	}
	return nil
}

// Exists reports whether name exists, as whatever type (a symlink is not
// followed). A parent that is a symlink is an error.
func (d *Dir) Exists(name string) (bool, error) {
	pfd, base, c, err := d.parent("lstat", name)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	switch err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.ENOENT):
		return false, nil
	default:
		return false, d.pathErr("lstat", c, err)
	}
}

// Rename moves oldname to newname, both below d. A symlink at either
// name is moved or replaced as a link, never followed.
func (d *Dir) Rename(oldname, newname string) error {
	opfd, obase, oc, err := d.parent("rename", oldname)
	if err != nil {
		return err
	}
	defer unix.Close(opfd)
	npfd, nbase, nc, err := d.parent("rename", newname)
	if err != nil {
		return err
	}
	defer unix.Close(npfd)
	if err := unix.Renameat(opfd, obase, npfd, nbase); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(d.name, oc), New: filepath.Join(d.name, nc), Err: err}
	}
	return nil
}

// RemoveAll removes name and everything below it; a missing name is not
// an error. Symlinks are removed, never followed, so nothing outside d is
// touched: a parent of name that is a symlink is an error. Directories
// without write permission for their owner are made writable first.
func (d *Dir) RemoveAll(name string) error {
	pfd, base, c, err := d.parent("remove", name)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := removeAt(pfd, base); err != nil {
		return d.pathErr("remove", c, err)
	}
	return nil
}

// removeAt removes base inside the open directory pfd, recursively.
func removeAt(pfd int, base string) error {
	uerr := unix.Unlinkat(pfd, base, 0)
	if uerr == nil || errors.Is(uerr, unix.ENOENT) {
		return nil
	}
	if !errors.Is(uerr, unix.EISDIR) && !errors.Is(uerr, unix.EPERM) { // EPERM: what some systems say for a directory
		return uerr
	}
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) {
		return uerr // not a directory: the unlink's own error stands
	}
	if err != nil {
		return linkErr(pfd, base, err)
	}
	f := os.NewFile(uintptr(fd), base)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err == nil && st.Mode&0o300 != 0o300 {
		_ = unix.Fchmod(fd, uint32(st.Mode&0o7777|0o700))
	}
	// Names are read in full before any is removed (removing while reading
	// can skip entries), and again until none is left.
	for range 8 {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			break
		}
		for _, n := range names {
			if err := removeAt(fd, n); err != nil {
				return fmt.Errorf("%s/%s: %w", base, n, err)
			}
		}
	}
	return unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR)
}
