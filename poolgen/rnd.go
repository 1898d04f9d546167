package poolgen

import (
	"math/rand/v2"
	"strings"
)

// Small helpers for drawing inputs and seed files. All inputs are plain JSON
// values (int, string, bool, []any, map[string]any) so they travel to the
// Python batch unchanged.

func rint(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo+1) }

func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func rword(r *rand.Rand, alphabet string, lo, hi int) string {
	n := rint(r, lo, hi)
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

func rints(r *rand.Rand, n, lo, hi int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = rint(r, lo, hi)
	}
	return out
}

func strsAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

func shuffled[T any](r *rand.Rand, xs []T) []T {
	out := append([]T(nil), xs...)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func permute(r *rand.Rand, s string) string {
	b := []byte(s)
	r.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	return string(b)
}

func randCase(r *rand.Rand, s string, p float64) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' && chance(r, p) {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

var vocab = []string{
	"apple", "river", "stone", "cloud", "green", "light", "table", "music", "north", "paper",
	"quick", "brown", "happy", "ocean", "plant", "sugar", "tiger", "water", "yellow", "zebra",
	"alpha", "delta", "omega", "pixel", "robot", "solar", "lunar", "metal", "glass", "cable",
	"data", "node", "file", "user", "path", "time", "code", "line", "word", "list",
}

var smallVocab = []string{"the", "cat", "dog", "sat", "on", "mat", "a", "red", "big", "ran", "and", "fox"}
