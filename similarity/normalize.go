package similarity

import (
	"unicode"
	"unicode/utf8"
)

// Words splits text into normalised words: lowercase runs of letters,
// digits and underscores, with every run of digits replaced by a single
// "0". Punctuation and whitespace only separate words, so re-wrapped lines
// and re-indented code give the same words, and changed numbers
// ("timeout 30" vs "timeout 45", "file2" vs "file7") compare equal.
func Words(text []byte) []string {
	var out []string
	eachWord(text, func(w []byte) { out = append(out, string(w)) })
	return out
}

// WordHashesOf is WordHashes(Words(text)) without making the words.
func WordHashesOf(text []byte) []uint64 {
	out := make([]uint64, 0, len(text)/6)
	eachWord(text, func(w []byte) {
		h := uint64(14695981039346656037)
		for _, c := range w {
			h ^= uint64(c)
			h *= 1099511628211
		}
		out = append(out, h)
	})
	return out
}

// eachWord calls fn with each normalised word of text (see Words); the
// slice is reused after fn returns.
func eachWord(text []byte, fn func([]byte)) {
	buf := make([]byte, 0, 32)
	inDigits := false
	flush := func() {
		if len(buf) > 0 {
			fn(buf)
			buf = buf[:0]
		}
		inDigits = false
	}
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(text[i:])
		}
		i += size
		switch {
		case r >= '0' && r <= '9':
			if !inDigits {
				buf = append(buf, '0')
				inDigits = true
			}
		case r == '_' || unicode.IsLetter(r):
			inDigits = false
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		case unicode.IsDigit(r) || unicode.IsMark(r):
			inDigits = false
			buf = utf8.AppendRune(buf, r)
		default:
			flush()
		}
	}
	flush()
}
