package pool

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Reason codes for unusable path values.
const (
	ReasonNullPath    = "null_path"
	ReasonNonUTF8Path = "non_utf8_path"
	ReasonUnsafePath  = "unsafe_path"
	// ReasonDuplicatePath: an earlier row has the same path.
	ReasonDuplicatePath = "duplicate_path"
	// ReasonNestedPath: the path is inside an earlier row's path, or holds
	// one: unpacked, one task would land inside the other's tree, where
	// that tree's symlinks decide where it goes.
	ReasonNestedPath = "nested_path"
)

// PathProblem checks a row's path value: it must be non-null UTF-8 and a
// clean relative path, because unpacking uses it as a directory name. It
// returns a reason code and detail, or "" when the path is fine.
func PathProblem(rec Record) (reason, detail string) {
	switch {
	case rec.PathNull:
		return ReasonNullPath, rec.Origin() + ": path is null"
	case !utf8.ValidString(rec.Path):
		return ReasonNonUTF8Path, fmt.Sprintf("%s: path %q is not valid UTF-8", rec.Origin(), rec.Path)
	}
	if why := unsafePath(rec.Path); why != "" {
		return ReasonUnsafePath, fmt.Sprintf("%s: path %q %s", rec.Origin(), rec.Path, why)
	}
	return "", ""
}

func unsafePath(p string) string {
	switch {
	case p == "":
		return "is empty"
	case strings.HasPrefix(p, "/"):
		return "is absolute"
	case strings.ContainsRune(p, 0):
		return "contains NUL"
	case strings.ContainsRune(p, '\\'):
		return "contains a backslash"
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." || part == "" {
			return "has an empty, '.' or '..' component"
		}
	}
	return ""
}

// PathSet claims the paths of a pool's rows in pool order, so each task
// gets a directory of its own when unpacked: a row whose path an earlier
// row already has is a duplicate, and a row whose path is inside an
// earlier row's path ("a/b" after "a") or holds one ("a" after "a/b") is
// nested. The later row is the one refused. The zero value is empty.
type PathSet struct {
	rows  map[string]int64 // claimed path -> its row
	under map[string]int64 // every proper prefix of a claimed path -> the first row below it
}

// Claim records the path of rec, which must have passed PathProblem, and
// returns "" when it clashes with no earlier claim; otherwise a reason
// code and detail, and the path is not recorded.
func (s *PathSet) Claim(rec Record) (reason, detail string) {
	if s.rows == nil {
		s.rows, s.under = make(map[string]int64), make(map[string]int64)
	}
	p := rec.Path
	if first, dup := s.rows[p]; dup {
		return ReasonDuplicatePath, fmt.Sprintf("%s: path %q already used by row %d", rec.Origin(), p, first)
	}
	if below, ok := s.under[p]; ok {
		return ReasonNestedPath, fmt.Sprintf("%s: path %q holds the path of row %d", rec.Origin(), p, below)
	}
	for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
		if outer, ok := s.rows[p[:i]]; ok {
			return ReasonNestedPath, fmt.Sprintf("%s: path %q is inside %q, the path of row %d", rec.Origin(), p, p[:i], outer)
		}
	}
	s.rows[p] = rec.Index
	for i := strings.IndexByte(p, '/'); i >= 0; i = nextSlash(p, i) {
		if _, ok := s.under[p[:i]]; !ok {
			s.under[p[:i]] = rec.Index
		}
	}
	return "", ""
}

// nextSlash returns the index of the first '/' in p after i, or -1.
func nextSlash(p string, i int) int {
	j := strings.IndexByte(p[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
