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

// WordHashesOf is WordHashes(Words(text)) without making the words: it
// hashes each normalised word's bytes as it reads them (FNV-1a, as
// hashWord), with a table for ASCII bytes, so no word is copied. It is on
// the static pass's hot path (every task's instruction and tests), and ran
// at 100 MB/s through eachWord.
func WordHashesOf(text []byte) []uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	out := make([]uint64, 0, len(text)/6)
	h, inWord, inDigits := uint64(offset), false, false
	i, n := 0, len(text)
	for i < n {
		// A run of ASCII word bytes, in a tight loop.
		for i < n {
			c := text[i]
			if c >= utf8.RuneSelf {
				break
			}
			k := asciiClass[c]
			i++
			if k > '0' { // a letter or '_'
				h = (h ^ uint64(k)) * prime
				inWord, inDigits = true, false
			} else if k == '0' {
				if !inDigits {
					h = (h ^ '0') * prime
					inWord, inDigits = true, true
				}
			} else {
				if inWord {
					out = append(out, h)
					h, inWord = offset, false
				}
				inDigits = false
			}
		}
		if i >= n {
			break
		}
		r, size := utf8.DecodeRune(text[i:])
		i += size
		r, ok := wordRune(r)
		if !ok {
			if inWord {
				out = append(out, h)
				h, inWord = offset, false
			}
			inDigits = false
			continue
		}
		var enc [utf8.UTFMax]byte
		for _, b := range utf8.AppendRune(enc[:0], r) {
			h = (h ^ uint64(b)) * prime
		}
		inWord, inDigits = true, false
	}
	if inWord {
		out = append(out, h)
	}
	return out
}

// asciiClass maps an ASCII byte to what eachWord makes of it: 0 for a
// separator, '0' for a digit, else the byte a word holds (letters
// lowercased, '_').
var asciiClass = func() (t [utf8.RuneSelf]byte) {
	for c := 0; c < utf8.RuneSelf; c++ {
		switch {
		case c >= '0' && c <= '9':
			t[c] = '0'
		case c >= 'a' && c <= 'z', c == '_':
			t[c] = byte(c)
		case c >= 'A' && c <= 'Z':
			t[c] = byte(c) + 'a' - 'A'
		}
	}
	return t
}()

// wordRune is what a word holds of a non-ASCII rune: letters lowercased,
// other digits and marks as they are; ok is false for a separator. ASCII
// bytes go through asciiClass.
func wordRune(r rune) (rune, bool) {
	switch {
	case unicode.IsLetter(r):
		return unicode.ToLower(r), true
	case unicode.IsDigit(r) || unicode.IsMark(r):
		return r, true
	}
	return r, false
}

// eachWord calls fn with each normalised word of text (see Words); the
// slice is reused after fn returns. Its rules are WordHashesOf's
// (asciiClass, wordRune).
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
		if c := text[i]; c < utf8.RuneSelf {
			i++
			switch k := asciiClass[c]; k {
			case 0:
				flush()
			case '0':
				if !inDigits {
					buf = append(buf, '0')
					inDigits = true
				}
			default:
				buf = append(buf, k)
				inDigits = false
			}
			continue
		}
		r, size := utf8.DecodeRune(text[i:])
		i += size
		if r, ok := wordRune(r); ok {
			buf = utf8.AppendRune(buf, r)
			inDigits = false
		} else {
			flush()
		}
	}
	flush()
}
