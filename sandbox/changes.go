package sandbox

import (
	"errors"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxWorkDepth bounds how deep the agent's changes may lie: a deeper path
// (no honest solution makes one; a 20,000-deep chain is an attack on the
// carry's time) makes the work too large to carry, which scores 0.
const MaxWorkDepth = 256

// ErrNoUpper says a writable layer cannot be read as an overlay upper
// directory (a renamed directory whose content stays below, or no
// access): the caller falls back to another way of listing changes.
var ErrNoUpper = errors.New("no walkable upper directory")

// WalkTree calls fn for every entry below root (a directory descriptor)
// from start, parents before children, with no symlink followed, for the
// paths keep accepts. The walk is iterative: it holds at most two file
// descriptors at a time however deep the tree (a 20,000-deep chain the
// agent made neither exhausts descriptors nor the stack); a path too
// long to open is skipped.
func WalkTree(root int, start string, keep func(string) bool, fn func(p string, st *unix.Stat_t) error) error {
	stack := []string{start}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		fd, err := OpenNoFollow(root, p, unix.O_PATH)
		if err != nil {
			continue // missing, a symlink on the way, or too long
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		unix.Close(fd)
		if err != nil {
			continue
		}
		if p != "/" {
			if err := fn(p, &st); err != nil {
				return err
			}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		dfd, err := OpenNoFollow(root, p, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			continue
		}
		d := os.NewFile(uintptr(dfd), p)
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			continue
		}
		sort.Sort(sort.Reverse(sort.StringSlice(names))) // popped in order
		for _, n := range names {
			if c := path.Join(p, n); keep(c) {
				stack = append(stack, c)
			}
		}
	}
	return nil
}

// ReadUpper records into w every change found in an overlay upper
// directory (upper, a descriptor of it): a 0/0 character device is a
// deletion (whiteout), an opaque directory a deleted and re-created one.
// A redirected (renamed) directory keeps content below the upper layer:
// ErrNoUpper, and nothing is recorded. Contents are read by w below its
// Root (the merged view), never from the upper directory.
func ReadUpper(upper int, w *WorkReader) error {
	keep := func(p string) bool { return p == "/logs" || w.carries(p) } // /logs itself is walked, not carried
	if !w.All {
		keep = func(p string) bool { return WorkPath(p, w.Workdir) }
	}
	var adds, dels []string
	seen := map[string]bool{} // nested work roots (a workdir below /home) are walked once
	walk := func(start string) error {
		return WalkTree(upper, start, keep, func(p string, st *unix.Stat_t) error {
			if seen[p] {
				return nil
			}
			seen[p] = true
			if d := strings.Count(p, "/"); d > MaxWorkDepth {
				return &WorkTooLargeError{Entries: int64(len(adds)), Depth: d}
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFCHR:
				if st.Rdev == 0 { // a whiteout
					dels = append(dels, p)
					return nil
				}
			case unix.S_IFDIR:
				fd, err := OpenNoFollow(upper, p, unix.O_RDONLY|unix.O_DIRECTORY)
				if err != nil {
					return ErrNoUpper
				}
				defer unix.Close(fd)
				if hasXattr(fd, "trusted.overlay.redirect") {
					return ErrNoUpper
				}
				if hasXattr(fd, "trusted.overlay.opaque") {
					dels = append(dels, p)
				}
			}
			adds = append(adds, p)
			return nil
		})
	}
	if w.All {
		if err := walk("/"); err != nil {
			return err
		}
	} else {
		roots := WorkRoots
		if wd := path.Clean(w.Workdir); path.IsAbs(wd) && wd != "/" && !SystemPath(wd) {
			roots = append([]string{wd}, roots...)
		}
		for _, r := range roots {
			if err := walk(r); err != nil {
				return err
			}
		}
	}
	for _, p := range dels {
		w.Delete(p)
	}
	for _, p := range adds {
		if err := w.Add(p); err != nil {
			return err
		}
	}
	return nil
}

// hasXattr reports whether the open file fd has the extended attribute.
func hasXattr(fd int, name string) bool {
	_, err := unix.Fgetxattr(fd, name, nil)
	return err == nil || errors.Is(err, unix.ERANGE)
}
