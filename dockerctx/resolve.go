package dockerctx

import (
	"path"
	"sort"
	"strconv"
	"strings"
)

// File is one regular file of the build context.
type File struct {
	Name   string // relative to the context root, slash-separated
	Digest [32]byte
	Size   int64
}

// Placed is a context file that reaches the final image.
type Placed struct {
	File File
	Dest string // path in the image
	Copy Copy   // the instruction that took it from the context
	Via  []Copy // the COPY --from instructions that carried it into the final stage, in order
}

// Problem kinds.
const (
	// ProblemOutside: a source that climbs out of the context ("../x").
	// The classic builder refuses it; BuildKit clamps it to the context
	// root, so the build fails unless the root has that name.
	ProblemOutside = "outside_context"
	// ProblemMissing: a source no context file matches (after
	// .dockerignore): the build fails.
	ProblemMissing = "missing_source"
)

// Problem is a COPY or ADD source Docker would not take from the context.
type Problem struct {
	Kind   string
	Copy   Copy
	Source string
}

// Resolve returns the context files the final stage of df holds, given
// the context's regular files and its .dockerignore (nil when none), and
// the sources Docker would not find.
//
// COPY --exclude patterns apply to paths relative to each source; a RUN
// that deletes a path with rm removes what was copied there. Not
// followed: other RUN steps (moves, conditional deletions), ADD of a local archive (its members are not
// read; the archive itself counts), ADD of a URL or git source, COPY
// --from of an external image, and heredoc sources (not context files).
func Resolve(df *Dockerfile, files []File, ignore *Ignore) ([]Placed, []Problem) {
	ctx := make([]File, 0, len(files))
	for _, f := range files {
		if !ignore.Excluded(f.Name) {
			ctx = append(ctx, f)
		}
	}
	sort.Slice(ctx, func(i, j int) bool { return ctx[i].Name < ctx[j].Name })
	var problems []Problem
	stages := make([]map[string]Placed, len(df.Stages))
	for i, st := range df.Stages {
		held := map[string]Placed{}
		if j := stageIndex(df, st.Base, i); j >= 0 {
			for k, v := range stages[j] {
				held[k] = v
			}
		}
		for _, c := range st.Copies {
			if c.Heredoc {
				continue
			}
			if c.Cmd == "RUN" {
				for d := range held {
					for _, rm := range c.Removes {
						if d == rm || strings.HasPrefix(d, rm+"/") || globMatch(rm, d) {
							delete(held, d)
						} else if root, ok := dirRoot(rm, d); ok && root != "" {
							delete(held, d)
						}
					}
				}
				continue
			}
			if c.From != "" {
				j := stageIndex(df, c.From, i)
				if j < 0 {
					continue // an external image
				}
				for _, p := range fromStage(stages[j], c) {
					held[p.Dest] = p
				}
				continue
			}
			placed, probs := fromContext(ctx, c, held)
			problems = append(problems, probs...)
			for _, p := range placed {
				held[p.Dest] = p
			}
		}
		stages[i] = held
	}
	final := stages[len(stages)-1]
	out := make([]Placed, 0, len(final))
	for _, p := range final {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dest < out[j].Dest })
	return out, problems
}

// stageIndex finds the earlier stage a FROM or --from names (by AS name
// or index), or -1 for an image.
func stageIndex(df *Dockerfile, ref string, before int) int {
	ref = strings.ToLower(ref)
	if n, err := strconv.Atoi(ref); err == nil {
		if n >= 0 && n < before {
			return n
		}
		return -1
	}
	for j := before - 1; j >= 0; j-- {
		if df.Stages[j].Name != "" && df.Stages[j].Name == ref {
			return j
		}
	}
	return -1
}

func isRemote(src string) bool {
	for _, p := range []string{"http://", "https://", "git@", "git://", "ssh://"} {
		if strings.HasPrefix(src, p) {
			return true
		}
	}
	return false
}

// match is one source match: a context file and its path relative to
// the matched source (the base name for a file source).
type match struct {
	f   File
	rel string
	dir bool // the source named a directory holding f
}

// fromContext places the context files one COPY or ADD takes.
func fromContext(ctx []File, c Copy, held map[string]Placed) ([]Placed, []Problem) {
	var problems []Problem
	var ms []match
	nMatched := 0
	for _, src := range c.Sources {
		if c.Cmd == "ADD" && isRemote(src) {
			continue
		}
		clean := path.Clean("/" + src) // what BuildKit resolves
		if raw := path.Clean(src); raw == ".." || strings.HasPrefix(raw, "../") {
			problems = append(problems, Problem{Kind: ProblemOutside, Copy: c, Source: src})
			continue
		}
		got, roots := matchSource(ctx, strings.TrimPrefix(clean, "/"))
		if len(got) == 0 {
			if !strings.Contains(src, "$") { // an unresolved build argument proves nothing
				problems = append(problems, Problem{Kind: ProblemMissing, Copy: c, Source: src})
			}
			continue
		}
		nMatched += roots
		ms = append(ms, got...)
	}
	destDir := strings.HasSuffix(c.Dest, "/") || nMatched > 1
	dest := strings.TrimSuffix(c.Dest, "/")
	if !destDir {
		for k := range held { // copying onto an existing directory
			if strings.HasPrefix(k, dest+"/") {
				destDir = true
				break
			}
		}
	}
	var excl *Ignore
	if len(c.Excludes) > 0 {
		excl = ParseIgnore([]byte(strings.Join(c.Excludes, "\n")))
	}
	var out []Placed
	for _, m := range ms {
		if excl.Excluded(m.rel) {
			continue
		}
		var to string
		switch {
		case c.Parents:
			to = joinPath(dest, m.f.Name)
		case m.dir || destDir:
			to = joinPath(dest, m.rel)
		default:
			to = dest
		}
		out = append(out, Placed{File: m.f, Dest: to, Copy: c})
	}
	return out, problems
}

// matchSource expands one cleaned, context-relative source: "" or "."
// is the whole context, a directory its files, a file itself, a
// wildcard every same-depth path it matches (Docker's rule). roots
// counts the distinct paths matched.
func matchSource(ctx []File, src string) ([]match, int) {
	if src == "" || src == "." {
		out := make([]match, len(ctx))
		for i, f := range ctx {
			out[i] = match{f: f, rel: f.Name, dir: true}
		}
		return out, 1
	}
	var out []match
	roots := map[string]bool{}
	depth := strings.Count(src, "/") + 1
	glob := strings.ContainsAny(src, "*?[")
	for _, f := range ctx {
		parts := strings.Split(f.Name, "/")
		if len(parts) < depth {
			continue
		}
		prefix := strings.Join(parts[:depth], "/")
		ok := prefix == src
		if !ok && glob {
			ok, _ = path.Match(src, prefix)
		}
		if !ok {
			continue
		}
		roots[prefix] = true
		if prefix == f.Name {
			out = append(out, match{f: f, rel: path.Base(f.Name)})
		} else {
			out = append(out, match{f: f, rel: strings.Join(parts[depth:], "/"), dir: true})
		}
	}
	return out, len(roots)
}

// fromStage places what a COPY --from takes out of an earlier stage's
// context-derived files.
func fromStage(held map[string]Placed, c Copy) []Placed {
	dest := strings.TrimSuffix(c.Dest, "/")
	destDir := strings.HasSuffix(c.Dest, "/") || len(c.Sources) > 1
	var out []Placed
	for _, src := range c.Sources {
		src = cleanAbs(src)
		for d, p := range held {
			var to string
			switch {
			case src == "/":
				to = joinPath(dest, strings.TrimPrefix(d, "/"))
			case d == src || globMatch(src, d):
				if destDir {
					to = joinPath(dest, path.Base(d))
				} else {
					to = dest
				}
			default:
				root, ok := dirRoot(src, d)
				if !ok {
					continue
				}
				to = joinPath(dest, strings.TrimPrefix(d, root+"/"))
			}
			q := p
			q.Dest = to
			q.Via = append(append([]Copy(nil), p.Via...), c)
			out = append(out, q)
		}
	}
	return out
}

// dirRoot reports the ancestor of d that the source src names (exactly
// or by wildcard), so d is copied as part of a directory.
func dirRoot(src, d string) (string, bool) {
	for a := path.Dir(d); a != "/" && a != "."; a = path.Dir(a) {
		if a == src || globMatch(src, a) {
			return a, true
		}
	}
	return "", false
}

func globMatch(pattern, name string) bool {
	if !strings.ContainsAny(pattern, "*?[") {
		return false
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

func joinPath(dir, rel string) string {
	if rel == "" || rel == "." {
		return cleanAbs(dir)
	}
	return cleanAbs(dir + "/" + rel)
}

func cleanAbs(p string) string { return path.Clean("/" + p) }
