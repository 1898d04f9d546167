package bundle

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeSimpleTOML decodes the plain subset of TOML that task.toml files
// are written in, into the same map go-toml's Unmarshal gives (tables as
// map[string]any, integers int64, floats float64, arrays []any), without
// go-toml's generic machinery: validating a pool parses one task.toml per
// task, and that was a tenth of the CPU. The subset: comments, [table]
// headers of bare names (dotted too: [verifier.env]), bare keys, "basic" and 'literal' strings
// without escapes, decimal integers, floats written digits.digits,
// booleans and one-line arrays of those. Anything else (escapes, dotted
// or quoted keys, dates, inline tables, multi-line values, duplicates,
// anything invalid) returns ok = false, and the caller parses the document
// with go-toml, so the result and every error message stay go-toml's.
func decodeSimpleTOML(b []byte) (doc map[string]any, ok bool) {
	// One copy of the document: keys and string values are slices of it.
	data := string(b)
	if !utf8.ValidString(data) {
		return nil, false
	}
	doc = map[string]any{}
	cur := doc
	for len(data) > 0 {
		var line string
		if i := strings.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
			if n := len(line); n > 0 && line[n-1] == '\r' { // CRLF
				line = line[:n-1]
			}
		} else {
			line, data = data, ""
		}
		p := skipBlank(line, 0)
		switch {
		case p == len(line):
			continue
		case line[p] == '#':
			if !commentOK(line[p+1:]) {
				return nil, false
			}
			continue
		case line[p] == '[':
			t, ok := simpleHeader(doc, line, p+1)
			if !ok {
				return nil, false
			}
			cur = t
			continue
		}
		key, q := bareKey(line, p)
		if key == "" {
			return nil, false
		}
		q = skipBlank(line, q)
		if q >= len(line) || line[q] != '=' {
			return nil, false
		}
		v, q, ok := simpleValue(line, skipBlank(line, q+1), false)
		if !ok || !restOK(line, q) {
			return nil, false
		}
		if _, dup := cur[key]; dup {
			return nil, false
		}
		cur[key] = v
	}
	return doc, true
}

// simpleHeader opens the table named by the header at line[i:] (after the
// '['), creating the tables on its path as go-toml would. A name that
// already exists (as a table, defined or implied, or as a value) is left
// to go-toml, which knows which redefinitions TOML allows.
func simpleHeader(doc map[string]any, line string, i int) (map[string]any, bool) {
	t := doc
	for {
		name, q := bareKey(line, i)
		if name == "" || q >= len(line) {
			return nil, false
		}
		v, exists := t[name]
		switch line[q] {
		case '.':
			if !exists {
				m := map[string]any{}
				t[name] = m
				t = m
			} else if m, isTable := v.(map[string]any); isTable {
				t = m
			} else {
				return nil, false
			}
			i = q + 1
		case ']':
			if exists || !restOK(line, q+1) {
				return nil, false
			}
			m := map[string]any{}
			t[name] = m
			return m, true
		default:
			return nil, false
		}
	}
}

func skipBlank(b string, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// commentOK: TOML forbids control characters other than tab in comments.
func commentOK(b string) bool {
	for _, c := range b {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// restOK: only blanks and an optional comment may follow a value or a
// header.
func restOK(line string, i int) bool {
	i = skipBlank(line, i)
	if i == len(line) {
		return true
	}
	return line[i] == '#' && commentOK(line[i+1:])
}

func bareKey(b string, i int) (string, int) {
	j := i
	for j < len(b) {
		c := b[j]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			j++
			continue
		}
		break
	}
	return b[i:j], j
}

// simpleValue decodes the value at b[i:]; inArray allows ',' and ']' to end
// a number, and forbids nested arrays.
func simpleValue(b string, i int, inArray bool) (any, int, bool) {
	if i >= len(b) {
		return nil, i, false
	}
	switch c := b[i]; {
	case c == '"' || c == '\'':
		if i+2 < len(b) && b[i+1] == c && b[i+2] == c {
			return nil, i, false // multi-line string
		}
		for j := i + 1; j < len(b); j++ {
			x := b[j]
			if x == c {
				return b[i+1 : j], j + 1, true
			}
			if x < 0x20 || x == 0x7f || (c == '"' && x == '\\') {
				return nil, i, false
			}
		}
		return nil, i, false
	case c == '[':
		if inArray {
			return nil, i, false
		}
		arr := []any{}
		j := skipBlank(b, i+1)
		for {
			if j < len(b) && b[j] == ']' {
				return arr, j + 1, true
			}
			v, k, ok := simpleValue(b, j, true)
			if !ok {
				return nil, i, false
			}
			arr = append(arr, v)
			k = skipBlank(b, k)
			switch {
			case k < len(b) && b[k] == ',':
				j = skipBlank(b, k+1)
			case k < len(b) && b[k] == ']':
				return arr, k + 1, true
			default:
				return nil, i, false
			}
		}
	case c == 't' || c == 'f':
		for _, w := range [...]string{"true", "false"} {
			if len(b)-i >= len(w) && b[i:i+len(w)] == w && ends(b, i+len(w), inArray) {
				return w == "true", i + len(w), true
			}
		}
		return nil, i, false
	}
	return simpleNumber(b, i, inArray)
}

// ends reports whether a scalar may end at b[i].
func ends(b string, i int, inArray bool) bool {
	if i == len(b) {
		return true
	}
	switch b[i] {
	case ' ', '\t', '#':
		return true
	case ',', ']':
		return inArray
	}
	return false
}

// simpleNumber decodes [+-]digits or [+-]digits.digits with no leading
// zero, no underscore and no exponent.
func simpleNumber(b string, i int, inArray bool) (any, int, bool) {
	j := i
	if j < len(b) && (b[j] == '+' || b[j] == '-') {
		j++
	}
	d := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == d || (b[d] == '0' && j-d > 1) {
		return nil, i, false
	}
	isFloat := false
	if j < len(b) && b[j] == '.' {
		isFloat = true
		j++
		f := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == f {
			return nil, i, false
		}
	}
	if !ends(b, j, inArray) {
		return nil, i, false
	}
	s := b[i:j]
	if isFloat {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, i, false
		}
		return f, j, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, i, false
	}
	return n, j, true
}
