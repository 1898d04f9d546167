// Package dockerctx answers, without building anything, which files of a
// Docker build context end up in the image a Dockerfile builds: it parses
// the Dockerfile (stages, COPY and ADD with their flags and both forms),
// applies .dockerignore, resolves each source against the context
// (directories, globs, "." ) and follows multi-stage copies (COPY --from)
// into the final stage.
//
// It is a static approximation: RUN steps that move or delete files,
// ADD of archives (extracted by Docker) and remote sources are not
// followed; see Resolve.
package dockerctx

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Dockerfile is a parsed Dockerfile.
type Dockerfile struct {
	Stages []Stage
}

// Stage is one FROM section.
type Stage struct {
	Name string // the AS name, lower case; "" when unnamed
	Base string // the FROM image or stage name, as written
	Line int    // line of the FROM instruction (1-based)
	// Workdir is the working directory at the end of the stage (what a
	// stage built FROM this one starts in).
	Workdir string
	Copies  []Copy // in instruction order
}

// Copy is one COPY or ADD instruction, or a RUN that deletes files with
// rm (Cmd "RUN", Removes set, no sources).
type Copy struct {
	Line    int    // 1-based line where the instruction starts
	Text    string // the instruction as written, continuations joined, whitespace squashed
	Cmd     string // "COPY", "ADD" or "RUN"
	From    string // --from value ("" = the build context)
	Parents bool   // --parents: source paths are kept below the destination
	// Excludes are the --exclude patterns (.dockerignore syntax, matched
	// against paths relative to each source).
	Excludes []string
	Sources  []string
	Dest     string // absolute (resolved against Workdir)
	Heredoc  bool   // a heredoc source: nothing comes from the context
	// Removes are the absolute paths a RUN deletes with rm (literal
	// arguments; globs kept for path.Match).
	Removes []string
}

// Error is a Dockerfile that does not parse.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("Dockerfile line %d: %s", e.Line, e.Msg) }

// knownInstructions are the instructions Docker's frontend accepts.
var knownInstructions = map[string]bool{
	"FROM": true, "RUN": true, "CMD": true, "LABEL": true, "MAINTAINER": true, "EXPOSE": true,
	"ENV": true, "ADD": true, "COPY": true, "ENTRYPOINT": true, "VOLUME": true, "USER": true,
	"WORKDIR": true, "ARG": true, "ONBUILD": true, "STOPSIGNAL": true, "HEALTHCHECK": true, "SHELL": true,
}

// logical is one instruction after continuation lines are joined.
type logical struct {
	line int
	cmd  string
	rest string
}

// Parse parses a Dockerfile. It returns an *Error for what Docker would
// reject too: an unknown instruction, an instruction before the first
// FROM other than ARG, no FROM at all, a COPY or ADD without a
// destination, a malformed JSON form or an unterminated heredoc.
func Parse(data []byte) (*Dockerfile, error) {
	ls, err := logicalLines(string(data))
	if err != nil {
		return nil, err
	}
	df := &Dockerfile{}
	vars := map[string]string{} // ARG defaults and ENV values, for ${VAR} in paths
	workdir := "/"
	for _, l := range ls {
		if !knownInstructions[l.cmd] {
			return nil, &Error{l.line, fmt.Sprintf("unknown instruction %s", l.cmd)}
		}
		if len(df.Stages) == 0 && l.cmd != "FROM" && l.cmd != "ARG" {
			return nil, &Error{l.line, l.cmd + " before the first FROM"}
		}
		switch l.cmd {
		case "FROM":
			f := strings.Fields(expand(l.rest, vars))
			f = dropFlags(f)
			if len(f) == 0 {
				return nil, &Error{l.line, "FROM without an image"}
			}
			st := Stage{Base: f[0], Line: l.line}
			if len(f) >= 3 && strings.EqualFold(f[1], "AS") {
				st.Name = strings.ToLower(f[2])
			}
			// A stage built FROM an earlier stage starts in its workdir.
			workdir = "/"
			for _, prev := range df.Stages {
				if prev.Name != "" && prev.Name == strings.ToLower(st.Base) {
					workdir = stageWorkdir(prev)
				}
			}
			st.Workdir = workdir
			df.Stages = append(df.Stages, st)
		case "ARG":
			for _, w := range strings.Fields(l.rest) {
				if k, v, ok := strings.Cut(w, "="); ok {
					vars[k] = strings.Trim(v, `"'`)
				}
			}
		case "ENV":
			f := strings.Fields(l.rest)
			if len(f) >= 2 && !strings.Contains(f[0], "=") {
				vars[f[0]] = strings.Join(f[1:], " ")
			} else {
				for _, w := range f {
					if k, v, ok := strings.Cut(w, "="); ok {
						vars[k] = strings.Trim(v, `"'`)
					}
				}
			}
		case "WORKDIR":
			wd := strings.Trim(strings.TrimSpace(expand(l.rest, vars)), `"'`)
			if !strings.HasPrefix(wd, "/") {
				wd = joinPath(workdir, wd)
			}
			workdir = cleanAbs(wd)
			setWorkdir(&df.Stages[len(df.Stages)-1], workdir)
		case "COPY", "ADD":
			c, err := parseCopy(l, vars, workdir)
			if err != nil {
				return nil, err
			}
			st := &df.Stages[len(df.Stages)-1]
			st.Copies = append(st.Copies, c)
		case "RUN":
			if rm := removedPaths(expand(l.rest, vars), workdir); len(rm) > 0 {
				st := &df.Stages[len(df.Stages)-1]
				st.Copies = append(st.Copies, Copy{Line: l.line, Cmd: "RUN", Text: squash("RUN " + l.rest), Removes: rm})
			}
		}
	}
	if len(df.Stages) == 0 {
		return nil, &Error{1, "no FROM instruction"}
	}
	return df, nil
}

func setWorkdir(st *Stage, wd string) { st.Workdir = wd }

func stageWorkdir(st Stage) string {
	if st.Workdir == "" {
		return "/"
	}
	return st.Workdir
}

// parseCopy reads the flags, sources and destination of COPY or ADD.
func parseCopy(l logical, vars map[string]string, workdir string) (Copy, error) {
	c := Copy{Line: l.line, Cmd: l.cmd, Text: squash(l.cmd + " " + l.rest)}
	rest := strings.TrimSpace(l.rest)
	// Flags come first, each "--name[=value]".
	for strings.HasPrefix(rest, "--") {
		flag, after, _ := strings.Cut(rest, " ")
		rest = strings.TrimSpace(after)
		name, val, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
		switch strings.ToLower(name) {
		case "from":
			c.From = strings.ToLower(expand(val, vars))
		case "parents":
			c.Parents = val == "" || val == "true"
		case "exclude":
			c.Excludes = append(c.Excludes, strings.Trim(val, `"'`))
		}
	}
	if strings.HasPrefix(rest, "<<") {
		c.Heredoc = true
		return c, nil
	}
	var parts []string
	if strings.HasPrefix(rest, "[") {
		if err := json.Unmarshal([]byte(rest), &parts); err != nil {
			return c, &Error{l.line, fmt.Sprintf("%s: malformed JSON form: %v", l.cmd, err)}
		}
	} else {
		parts = strings.Fields(rest)
		for i, p := range parts {
			parts[i] = strings.Trim(p, `"'`)
		}
	}
	for i := range parts {
		parts[i] = expand(parts[i], vars)
	}
	if len(parts) < 2 {
		return c, &Error{l.line, l.cmd + " needs a source and a destination"}
	}
	c.Sources, c.Dest = parts[:len(parts)-1], parts[len(parts)-1]
	for _, s := range c.Sources {
		if strings.HasPrefix(s, "<<") {
			c.Heredoc = true
		}
	}
	dir := strings.HasSuffix(c.Dest, "/") || c.Dest == "." || c.Dest == ".."
	if !strings.HasPrefix(c.Dest, "/") {
		c.Dest = joinPath(workdir, c.Dest)
	}
	c.Dest = cleanAbs(c.Dest)
	if dir && c.Dest != "/" {
		c.Dest += "/"
	}
	return c, nil
}

// logicalLines joins continuation lines, drops comments and empty lines,
// skips heredoc bodies and honours the escape parser directive.
func logicalLines(src string) ([]logical, error) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	escape := byte('\\')
	// Parser directives: leading "# key=value" comments.
	for _, ln := range lines {
		t := strings.TrimSpace(ln)
		if !strings.HasPrefix(t, "#") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(t, "#")), "=")
		if !ok {
			break
		}
		if strings.EqualFold(strings.TrimSpace(k), "escape") && strings.TrimSpace(v) == "`" {
			escape = '`'
		}
	}
	var out []logical
	var cur *logical
	var buf strings.Builder
	// finish closes the current instruction, whose last line is i, and
	// returns the index of the last line it uses (heredoc bodies included).
	finish := func(i int) (int, error) {
		cur.rest = strings.TrimSpace(buf.String())
		// Heredocs (RUN <<EOF, COPY <<EOF /dst): skip their bodies.
		for _, tag := range heredocTags(cur.rest) {
			j := i + 1
			for ; j < len(lines); j++ {
				if strings.TrimSpace(lines[j]) == tag {
					break
				}
			}
			if j == len(lines) {
				return i, &Error{cur.line, fmt.Sprintf("heredoc <<%s is not terminated", tag)}
			}
			i = j
		}
		out = append(out, *cur)
		cur = nil
		return i, nil
	}
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" || strings.HasPrefix(t, "#") {
			continue // comments and empty lines vanish, inside a continuation too
		}
		cont := t[len(t)-1] == escape
		if cont {
			t = strings.TrimSpace(t[:len(t)-1])
		}
		if cur == nil {
			cmd, rest, _ := strings.Cut(t, " ")
			if j := strings.IndexAny(cmd, "\t"); j >= 0 {
				cmd, rest = cmd[:j], cmd[j+1:]+" "+rest
			}
			cur = &logical{line: i + 1, cmd: strings.ToUpper(cmd)}
			buf.Reset()
			buf.WriteString(rest)
		} else if t != "" {
			buf.WriteString(" ")
			buf.WriteString(t)
		}
		if cont {
			continue
		}
		var err error
		if i, err = finish(i); err != nil {
			return nil, err
		}
	}
	if cur != nil { // the file ends in a continuation
		if _, err := finish(len(lines) - 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// removedPaths returns the paths the rm commands of a RUN delete:
// arguments of rm that are not options, up to the next shell operator,
// made absolute against the workdir. Commands after "||" (may not run)
// and arguments with shell expansions are left out.
func removedPaths(run, workdir string) []string {
	var out []string
	words := strings.Fields(strings.NewReplacer(";", " ; ", "&&", " && ", "||", " || ", "|", " | ").Replace(run))
	in, skip := false, false
	for _, w := range words {
		switch w {
		case ";", "&&":
			in, skip = false, false
			continue
		case "||", "|":
			in, skip = false, true
			continue
		}
		if skip {
			continue
		}
		if !in {
			in = w == "rm"
			continue
		}
		if strings.HasPrefix(w, "-") || strings.ContainsAny(w, "$`\"'") {
			continue
		}
		if !strings.HasPrefix(w, "/") {
			w = joinPath(workdir, w)
		}
		out = append(out, cleanAbs(w))
	}
	return out
}

// heredocTags returns the terminators of the heredocs an instruction
// opens ("<<EOF", "<<-EOF", "<<'EOF'", "<<\"EOF\"").
func heredocTags(rest string) []string {
	var tags []string
	for _, w := range strings.Fields(rest) {
		if !strings.HasPrefix(w, "<<") || strings.HasPrefix(w, "<<<") {
			continue
		}
		tag := strings.TrimPrefix(strings.TrimPrefix(w, "<<"), "-")
		tag = strings.Trim(tag, `"'`)
		if tag != "" && isIdent(tag) {
			tags = append(tags, tag)
		}
	}
	return tags
}

func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// dropFlags removes leading --flags (FROM --platform=...).
func dropFlags(f []string) []string {
	for len(f) > 0 && strings.HasPrefix(f[0], "--") {
		f = f[1:]
	}
	return f
}

// expand substitutes $VAR, ${VAR} and ${VAR:-default} with known values;
// unknown variables expand to their default or stay as written.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				break
			}
			body := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(body, ":-")
			if v, ok := vars[name]; ok && (v != "" || !hasDef) {
				b.WriteString(v)
			} else if hasDef {
				b.WriteString(def)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
			j++
		}
		if v, ok := vars[s[i+1:j]]; ok && j > i+1 {
			b.WriteString(v)
		} else {
			b.WriteString(s[i:j])
		}
		i = j - 1
	}
	return b.String()
}

func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
