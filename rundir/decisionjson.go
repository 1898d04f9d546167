package rundir

import (
	"strconv"
	"unicode/utf8"
)

// appendDecisionJSON appends d as one line of JSON, byte-identical to
// encoding/json's Encoder with SetEscapeHTML(false), and reports false
// (appending nothing) for decisions with a score, evidence or a proof, which the
// caller encodes with encoding/json. The plain decisions of the static
// stages are two per task of a 100K-task pool; by hand they cost a tenth
// of the reflection encoder's time and allocate nothing.
func appendDecisionJSON(b []byte, d *Decision) ([]byte, bool) {
	if d.ScoreSeconds != nil || d.ScoreRate != nil || d.Evidence != nil || d.Proof != "" {
		return b, false
	}
	b = append(b, `{"index":`...)
	b = strconv.AppendInt(b, d.Index, 10)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, d.Path)
	b = append(b, `,"stage":`...)
	b = appendJSONString(b, d.Stage)
	b = append(b, `,"verdict":`...)
	b = appendJSONString(b, string(d.Verdict))
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, d.Reason)
	if d.Detail != "" {
		b = append(b, `,"detail":`...)
		b = appendJSONString(b, d.Detail)
	}
	if d.Hash != "" {
		b = append(b, `,"hash":`...)
		b = appendJSONString(b, d.Hash)
	}
	if len(d.Flags) > 0 {
		b = append(b, `,"flags":[`...)
		for i, f := range d.Flags {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f)
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...), true
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does without HTML escaping:
// `"` and `\` escaped, control characters as \b \f \n \r \t or \u00XX,
// invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u2028 and \u2029.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
