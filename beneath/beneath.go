// Package beneath creates, opens, renames and removes files below a
// directory without ever following a symbolic link, so that no name can
// reach outside it: not a link planted in the directory beforehand, not
// one created by an earlier write, not one swapped in meanwhile. Symlinks
// can still be created (Symlink); they are never traversed.
//
// On Linux every lookup is one openat2 call with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS; where the kernel lacks openat2 (before 5.6, or a
// seccomp filter refuses it) the same guarantee comes from a walk that
// opens one component at a time with O_NOFOLLOW. Elsewhere on Unix only
// the walk is used; on other systems os.Root confines the names.
package beneath

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrSymlink is the error (inside an *fs.PathError) for a name that
// passes through, or ends on, a symbolic link where a directory or file
// was expected.
var ErrSymlink = errors.New("path passes through a symlink")

// ErrOutside is the error for a name that is absolute, empty or has a
// ".." component.
var ErrOutside = errors.New("name is not a relative path below the directory")

// clean checks a slash-separated name and returns it cleaned; "." names
// the directory itself.
func clean(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%q: %w", name, ErrOutside)
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q: %w", name, ErrOutside)
	}
	return c, nil
}

// split returns the parent ("." for the top level) and the last element
// of a clean name other than ".".
func split(name string) (dir, base string) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ".", name
	}
	return name[:i], name[i+1:]
}
