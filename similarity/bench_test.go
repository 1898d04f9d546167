package similarity

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// benchText is about 30 KB of prose-like and code-like words, the size of a
// padded task's tests.
func benchText() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"def", "test_parse", "assert", "result", "==", "the", "value", "of", "config", "x", "42", "self.", "return", "None", "import", "pytest", "(", ")", "Ünïcode", "file_7"}
	var b strings.Builder
	for b.Len() < 30<<10 {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(8) == 0 {
			b.WriteByte('\n')
		} else {
			b.WriteByte(' ')
		}
	}
	return []byte(b.String())
}

func BenchmarkWordHashesOf(b *testing.B) {
	text := benchText()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		WordHashesOf(text)
	}
}

func BenchmarkShinglesOf(b *testing.B) {
	hs := WordHashesOf(benchText())
	b.ReportMetric(float64(len(hs)), "words")
	for b.Loop() {
		ShinglesOf(hs, 4)
	}
}

func BenchmarkSign(b *testing.B) {
	sh := ShinglesOf(WordHashesOf(benchText()), 4)
	for b.Loop() {
		Sign(sh, 64, 1)
	}
}
