package dockerctx

import (
	"path"
	"regexp"
	"strings"
)

// Ignore is a parsed .dockerignore: Docker's rules (moby/patternmatcher):
// one pattern a line, "#" comments, a leading "/" and redundant path
// elements cleaned away, "*" and "?" within one path element, "**" across
// any number of them, a pattern that matches a directory excluding all
// below it, and "!" re-including what an earlier pattern excluded; the
// last matching line wins.
type Ignore struct {
	rules []ignoreRule
}

type ignoreRule struct {
	re     *regexp.Regexp
	negate bool
}

// ParseIgnore reads a .dockerignore. Patterns that do not compile are
// skipped (Docker rejects them with an error; such a build fails anyway).
func ParseIgnore(data []byte) *Ignore {
	ig := &Ignore{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		if neg {
			line = strings.TrimSpace(line[1:])
		}
		line = path.Clean(strings.TrimPrefix(line, "/"))
		if line == "." {
			continue
		}
		re, err := regexp.Compile(patternRegexp(line))
		if err != nil {
			continue
		}
		ig.rules = append(ig.rules, ignoreRule{re: re, negate: neg})
	}
	return ig
}

// Excluded reports whether .dockerignore keeps name (a context-relative
// file path) out of the build context.
func (ig *Ignore) Excluded(name string) bool {
	if ig == nil {
		return false
	}
	excluded := false
	for _, r := range ig.rules {
		if r.matchesOrParent(name) {
			excluded = !r.negate
		}
	}
	return excluded
}

// matchesOrParent: a pattern matching a parent directory matches its
// children too.
func (r ignoreRule) matchesOrParent(name string) bool {
	for n := name; n != "." && n != "/" && n != ""; n = path.Dir(n) {
		if r.re.MatchString(n) {
			return true
		}
	}
	return false
}

// patternRegexp translates a pattern the way patternmatcher does.
func patternRegexp(p string) string {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '*' && i+1 < len(p) && p[i+1] == '*':
			i++
			if i+1 < len(p) && p[i+1] == '/' {
				// "**/" matches zero or more directories.
				i++
				b.WriteString("(.*/)?")
			} else {
				b.WriteString(".*")
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := p[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += j
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(string(p[i])))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return b.String()
}
