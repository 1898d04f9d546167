package bundle

import (
	"strings"
)

// maxLinkDepth bounds how many symlinks one resolution may pass through,
// nested. Linux gives up after 40 (ELOOP), so a chain that needs more
// cannot resolve on disk; it is refused rather than followed further.
const maxLinkDepth = 40

// linkSet holds a tree's symlinks and resolves their targets the way the
// filesystem would once the tree is on disk: each component of a target
// is looked up in turn and, when it names another symlink of the tree,
// replaced by where that symlink leads. A target that stays inside the
// tree as text (symlinkInside) can still leave it through other links:
// with s -> ".", the target "s/s/../.." is ".." on disk.
//
// The zero value is an empty set; only trees that hold symlinks allocate.
type linkSet struct {
	targets map[string]string // symlink name -> target as stored
	order   []string          // names in the order added, for stable reports
	// resolved caches where a symlink leads (a clean relative path, ""
	// for the tree's root) and how deep. Where a link leads depends only on its own
	// name, its target and the other links, so each is resolved once.
	resolved map[string]resolvedLink
}

type resolvedLink struct {
	loc   string
	depth int
}

func (s *linkSet) add(name, target string) {
	if s.targets == nil {
		s.targets = make(map[string]string)
	}
	s.targets[name] = target
	s.order = append(s.order, name)
}

// check resolves every symlink and returns a link_escapes_tree *Defect
// for the first, in the order added, that leads outside the tree or
// through more than maxLinkDepth nested links.
func (s *linkSet) check() error {
	if len(s.order) == 0 {
		return nil
	}
	s.resolved = make(map[string]resolvedLink, len(s.order))
	for _, name := range s.order {
		if _, _, err := s.resolve(name, 0); err != nil {
			target := s.targets[name]
			if err == errLinkTooDeep {
				return defectf(ReasonLinkEscapesTree, "symlink %s points to %q, which passes through more than %d nested symlinks (a loop?)", name, target, maxLinkDepth)
			}
			return defectf(ReasonLinkEscapesTree, "symlink %s points to %q, which leads outside the tree through other symlinks", name, target)
		}
	}
	return nil
}

type linkError string

func (e linkError) Error() string { return string(e) }

const (
	errLinkEscapes = linkError("leads outside the tree")
	errLinkTooDeep = linkError("too many nested symlinks")
)

// resolve returns where the symlink name leads and how many links deep
// its resolution goes (1 when its target passes through no other link),
// following the links its target passes through; nesting is how many
// resolutions are under way around this one. The depth, unlike the
// nesting, does not depend on the order links are checked in, so neither
// does the verdict.
func (s *linkSet) resolve(name string, nesting int) (loc string, depth int, err error) {
	if r, ok := s.resolved[name]; ok {
		return r.loc, r.depth, nil
	}
	if nesting >= maxLinkDepth { // a loop, or a chain too deep to matter
		return "", 0, errLinkTooDeep
	}
	// Member names never pass through a symlink (record refuses them), so
	// the link's own directory is a real one.
	cur := ""
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		cur = name[:i]
	}
	rest := s.targets[name]
	if strings.HasPrefix(rest, "/") {
		return "", 0, errLinkEscapes
	}
	depth = 1
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, "/")
		switch part {
		case "", ".":
			continue
		case "..":
			if cur == "" {
				return "", 0, errLinkEscapes
			}
			if i := strings.LastIndexByte(cur, '/'); i >= 0 {
				cur = cur[:i]
			} else {
				cur = ""
			}
			continue
		}
		next := part
		if cur != "" {
			next = cur + "/" + part
		}
		if _, isLink := s.targets[next]; isLink {
			loc, d, err := s.resolve(next, nesting+1)
			if err != nil {
				return "", 0, err
			}
			next, depth = loc, max(depth, d+1)
		}
		cur = next
	}
	if depth > maxLinkDepth {
		return "", 0, errLinkTooDeep
	}
	s.resolved[name] = resolvedLink{cur, depth}
	return cur, depth, nil
}
