package op

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Result is the outcome of a file operation: Status, and for NotRegular
// the type of what was found, for Failed the message.
type Result struct {
	Status Status
	Detail string
}

func failed(format string, a ...any) Result { return Result{Failed, fmt.Sprintf(format, a...)} }

// typeName names the type in a stat mode.
func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return "unknown type"
}

// components splits a clean absolute path; "/" has none.
func components(p string) ([]string, error) {
	if !path.IsAbs(p) {
		return nil, fmt.Errorf("%q is not absolute", p)
	}
	p = path.Clean(p)
	if p == "/" {
		return nil, nil
	}
	return strings.Split(p[1:], "/"), nil
}

const dirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// walk opens the directory below dirfd named by comps, following no
// symlink. A component that is missing gives NotFound, one that is not a
// directory NotRegular with its type. The caller closes the returned fd.
func walk(dirfd int, comps []string) (int, Result) {
	fd, err := unix.Openat(dirfd, ".", dirFlags, 0)
	if err != nil {
		return -1, failed("open: %v", err)
	}
	for _, c := range comps {
		next, err := unix.Openat(fd, c, dirFlags, 0)
		if err != nil {
			var st unix.Stat_t
			serr := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW)
			unix.Close(fd)
			switch {
			case serr != nil && errors.Is(serr, unix.ENOENT):
				return -1, Result{Status: NotFound}
			case serr == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR:
				return -1, Result{NotRegular, c + " is a " + typeName(st.Mode)}
			}
			return -1, failed("open %s: %v", c, err)
		}
		unix.Close(fd)
		fd = next
	}
	return fd, Result{Status: OK}
}

// ReadFile reads at most max bytes of the regular file at p (the first
// ones, or the last ones when tail is set) without following a symlink in
// any component; anything but a regular file is never opened, only
// lstat'ed, and reported as NotRegular with its type.
func ReadFile(p string, max int64, tail bool) ([]byte, Result) {
	comps, err := components(p)
	if err != nil {
		return nil, failed("read: %v", err)
	}
	if len(comps) == 0 {
		return nil, Result{NotRegular, "/ is a directory"}
	}
	if max <= 0 {
		return nil, failed("read %s: no size cap", p)
	}
	root, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return nil, failed("open /: %v", err)
	}
	defer unix.Close(root)
	dir, res := walk(root, comps[:len(comps)-1])
	if res.Status != OK {
		return nil, res
	}
	defer unix.Close(dir)
	name := comps[len(comps)-1]
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, Result{Status: NotFound}
		}
		return nil, failed("stat %s: %v", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, Result{NotRegular, typeName(st.Mode)}
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, failed("open %s: %v", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil {
		return nil, failed("stat %s: %v", p, err)
	}
	if st2.Mode&unix.S_IFMT != unix.S_IFREG || st2.Ino != st.Ino || st2.Dev != st.Dev {
		return nil, Result{NotRegular, "replaced while opened"}
	}
	var off int64
	if tail && st2.Size > max {
		off = st2.Size - max
	}
	data, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, off, max), max))
	if err != nil {
		return nil, failed("read %s: %v", p, err)
	}
	return data, Result{Status: OK}
}

// Entry kinds on the wire (the order of bundle.Kind).
const (
	KindDir byte = iota
	KindFile
	KindSymlink
	KindHardlink
)

// Entry is one member written by ResetDir: Name is relative and slash
// separated; Link is a symlink's target, or a hardlink's source (a Name
// written before it).
type Entry struct {
	Kind byte
	Mode uint32
	Name string
	Link string
	Data []byte
}

// WriteEntries encodes entries: per entry its kind (1 byte), mode (4
// bytes), then Name, Link and Data each as an 8-byte length and the
// bytes, big endian.
func WriteEntries(w io.Writer, entries []Entry) error {
	var hdr [5]byte
	for _, e := range entries {
		hdr[0] = e.Kind
		binary.BigEndian.PutUint32(hdr[1:], e.Mode)
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		for _, b := range [][]byte{[]byte(e.Name), []byte(e.Link), e.Data} {
			if err := binary.Write(w, binary.BigEndian, uint64(len(b))); err != nil {
				return err
			}
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadEntries decodes what WriteEntries wrote; limit caps every length.
func ReadEntries(r io.Reader, limit int64) ([]Entry, error) {
	var out []Entry
	for {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("entry %d: %w", len(out), err)
		}
		e := Entry{Kind: hdr[0], Mode: binary.BigEndian.Uint32(hdr[1:])}
		var parts [3][]byte
		for i := range parts {
			var n uint64
			if err := binary.Read(r, binary.BigEndian, &n); err != nil {
				return nil, fmt.Errorf("entry %d: %w", len(out), err)
			}
			if n > uint64(limit) {
				return nil, fmt.Errorf("entry %d: length %d over %d", len(out), n, limit)
			}
			parts[i] = make([]byte, n)
			if _, err := io.ReadFull(r, parts[i]); err != nil {
				return nil, fmt.Errorf("entry %d: %w", len(out), err)
			}
		}
		e.Name, e.Link, e.Data = string(parts[0]), string(parts[1]), parts[2]
		out = append(out, e)
	}
}

// ResetDir removes whatever is at dir (a tree, file, symlink, FIFO or
// device: never followed, never opened but as a directory), creates dir
// afresh with mode, owned by root, failing if something appears there in
// between, and writes entries into it (owned by root, modes kept, created
// exclusively, no symlink followed). Parents of dir are created when
// missing (0755) and replaced by directories when they are not ones.
func ResetDir(dir string, mode uint32, entries []Entry) Result {
	comps, err := components(dir)
	if err != nil || len(comps) == 0 {
		return failed("reset %q: not an absolute directory below /", dir)
	}
	root, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return failed("open /: %v", err)
	}
	defer unix.Close(root)
	parent, err := makeDirs(root, comps[:len(comps)-1], true)
	if err != nil {
		return failed("reset %s: %v", dir, err)
	}
	defer unix.Close(parent)
	name := comps[len(comps)-1]
	if err := removeAt(parent, name); err != nil {
		return failed("reset %s: remove: %v", dir, err)
	}
	if err := unix.Mkdirat(parent, name, mode&0o7777); err != nil {
		return failed("reset %s: create: %v", dir, err)
	}
	if err := unix.Fchownat(parent, name, 0, 0, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return failed("reset %s: chown: %v", dir, err)
	}
	if err := unix.Fchmodat(parent, name, mode&0o7777, 0); err != nil {
		return failed("reset %s: chmod: %v", dir, err)
	}
	fd, err := unix.Openat(parent, name, dirFlags, 0)
	if err != nil {
		return failed("reset %s: open: %v", dir, err)
	}
	defer unix.Close(fd)
	for _, e := range entries {
		if err := writeEntry(fd, e); err != nil {
			return failed("reset %s: %s: %v", dir, e.Name, err)
		}
	}
	return Result{Status: OK}
}

// makeDirs opens the directory comps below dirfd, creating what is missing
// (0755, root). With replace, a component that is not a directory (a
// symlink, a file) is removed and created as one; without, it fails.
func makeDirs(dirfd int, comps []string, replace bool) (int, error) {
	fd, err := unix.Openat(dirfd, ".", dirFlags, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range comps {
		var st unix.Stat_t
		err := unix.Fstatat(fd, c, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		case err == nil && replace:
			if err := unix.Unlinkat(fd, c, 0); err != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("remove %s (a %s): %v", c, typeName(st.Mode), err)
			}
			fallthrough
		case errors.Is(err, unix.ENOENT):
			if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, fmt.Errorf("create %s: %v", c, err)
			}
		case err == nil:
			unix.Close(fd)
			return -1, fmt.Errorf("%s is a %s", c, typeName(st.Mode))
		default:
			unix.Close(fd)
			return -1, fmt.Errorf("stat %s: %v", c, err)
		}
		next, err := unix.Openat(fd, c, dirFlags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("open %s: %v", c, err)
		}
		fd = next
	}
	return fd, nil
}

// removeAt removes name below dirfd and, for a directory, everything in
// it, following no link.
func removeAt(dirfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(dirfd, name, 0)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), name)
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if err := removeAt(fd, n); err != nil {
				return fmt.Errorf("%s/%s: %w", name, n, err)
			}
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			return err
		}
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// writeEntry creates one entry below the directory fd.
func writeEntry(fd int, e Entry) error {
	comps := strings.Split(e.Name, "/")
	for _, c := range comps {
		if c == "" || c == "." || c == ".." {
			return errors.New("not a clean relative name")
		}
	}
	parent, err := makeDirs(fd, comps[:len(comps)-1], false)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	name := comps[len(comps)-1]
	mode := e.Mode & 0o7777
	switch e.Kind {
	case KindDir:
		if err := unix.Mkdirat(parent, name, mode); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("not a directory after mkdir (%v)", err)
		}
		return unix.Fchmodat(parent, name, mode, 0)
	case KindFile:
		f, err := unix.Openat(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		w := os.NewFile(uintptr(f), name)
		defer w.Close()
		if _, err := w.Write(e.Data); err != nil {
			return err
		}
		if err := unix.Fchown(f, 0, 0); err != nil {
			return err
		}
		return unix.Fchmod(f, mode)
	case KindSymlink:
		if err := unix.Symlinkat(e.Link, parent, name); err != nil {
			return err
		}
		return unix.Fchownat(parent, name, 0, 0, unix.AT_SYMLINK_NOFOLLOW)
	case KindHardlink:
		src := strings.Split(e.Link, "/")
		for _, c := range src {
			if c == "" || c == "." || c == ".." {
				return errors.New("hardlink source is not a clean relative name")
			}
		}
		sdir, err := makeDirs(fd, src[:len(src)-1], false)
		if err != nil {
			return err
		}
		defer unix.Close(sdir)
		return unix.Linkat(sdir, src[len(src)-1], parent, name, 0)
	}
	return fmt.Errorf("unknown entry kind %d", e.Kind)
}
