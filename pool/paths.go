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
