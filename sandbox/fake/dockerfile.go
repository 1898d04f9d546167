package fake

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// instruction is one Dockerfile instruction.
type instruction struct {
	line  int    // 1-based line of its first line
	cmd   string // upper-cased keyword
	flags []string
	args  string   // the rest, continuation lines joined
	json  []string // the exec (JSON) form, when args is one
}

func (in instruction) String() string {
	s := in.cmd
	for _, f := range in.flags {
		s += " " + f
	}
	return s + " " + in.args
}

// parseDockerfile splits a Dockerfile into instructions: comment lines
// dropped, backslash continuations joined, leading --flags separated, JSON
// arrays decoded. Heredocs are not recognised (the Docker backend uses the
// classic builder, which has none either).
func parseDockerfile(data []byte) ([]instruction, error) {
	var out []instruction
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		start := i + 1
		var b strings.Builder
		for {
			cont := strings.HasSuffix(t, `\`)
			if cont {
				t = strings.TrimSuffix(t, `\`)
			}
			b.WriteString(t)
			if !cont {
				break
			}
			b.WriteString(" ")
			for i++; i < len(lines); i++ { // comment and empty lines inside a continuation are dropped
				t = strings.TrimSpace(lines[i])
				if t != "" && !strings.HasPrefix(t, "#") {
					break
				}
			}
			if i >= len(lines) {
				break
			}
		}
		full := strings.TrimSpace(b.String())
		kw, rest, _ := strings.Cut(full, " ")
		in := instruction{line: start, cmd: strings.ToUpper(kw)}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") {
			f, r, _ := strings.Cut(rest, " ")
			in.flags = append(in.flags, f)
			rest = strings.TrimSpace(r)
		}
		in.args = rest
		if strings.HasPrefix(rest, "[") {
			var arr []string
			if err := json.Unmarshal([]byte(rest), &arr); err == nil {
				in.json = arr
			}
		}
		out = append(out, in)
	}
	if len(out) == 0 {
		return nil, errors.New("the Dockerfile has no instructions")
	}
	return out, nil
}

// flag returns the value of --name=value among flags.
func flag(flags []string, name string) (string, bool) {
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v, true
		}
		if f == "--"+name {
			return "", true
		}
	}
	return "", false
}

// expand substitutes $VAR, ${VAR}, ${VAR:-word} and ${VAR:+word} from
// vars, as the Dockerfile parser does for WORKDIR, USER, COPY and ADD;
// \$ is a literal dollar.
func expand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		case s[i] == '$':
			v, next := expandAt(s, i, vars)
			b.WriteString(v)
			i = next - 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// expandAt expands the variable reference at s[i] ('$') and returns its
// value and the index after it; a '$' that starts no reference is itself.
func expandAt(s string, i int, vars map[string]string) (string, int) {
	if i+1 >= len(s) {
		return "$", i + 1
	}
	if s[i+1] == '{' {
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return s[i:], len(s)
		}
		body := s[i+2 : i+end]
		name, word, op := body, "", ""
		if k := strings.Index(body, ":-"); k >= 0 {
			name, word, op = body[:k], body[k+2:], "-"
		} else if k := strings.Index(body, ":+"); k >= 0 {
			name, word, op = body[:k], body[k+2:], "+"
		}
		v, ok := vars[name]
		switch {
		case op == "-" && (!ok || v == ""):
			v = expand(word, vars)
		case op == "+" && ok && v != "":
			v = expand(word, vars)
		case op == "+":
			v = ""
		}
		return v, i + end + 1
	}
	j := i + 1
	for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i+1 && s[j] >= '0' && s[j] <= '9') {
		j++
	}
	if j == i+1 {
		return "$", i + 1
	}
	return vars[s[i+1:j]], j
}

// words splits s at unquoted blanks, removing quotes and backslash
// escapes and expanding variables outside single quotes (the syntax of
// ENV, ARG and COPY arguments).
func words(s string, vars map[string]string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '$':
			v, next := expandAt(s, i, vars)
			cur.WriteString(v)
			i = next - 1
			inWord = true
		case quote == '"':
			if c == '"' {
				quote = 0
			} else if c == '\\' && i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// keyValues parses `k=v k2="v 2"` or the legacy `k v w` form (one key,
// the rest its value), expanding variables in values.
func keyValues(args string, vars map[string]string) ([][2]string, error) {
	first, rest, _ := strings.Cut(args, " ")
	if !strings.Contains(first, "=") {
		if first == "" {
			return nil, errors.New("missing key")
		}
		ws, err := words(strings.TrimSpace(rest), vars)
		if err != nil {
			return nil, err
		}
		return [][2]string{{first, strings.Join(ws, " ")}}, nil
	}
	ws, err := words(args, vars)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, w := range ws {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not KEY=value", w)
		}
		out = append(out, [2]string{k, v})
	}
	return out, nil
}
