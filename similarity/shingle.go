package similarity

import (
	"iter"
	"slices"

	"github.com/otcurate/otcurate/internal/radix"
)

// hashWord is FNV-1a over a word's bytes.
func hashWord(w string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(w); i++ {
		h ^= uint64(w[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is a 64-bit finaliser (splitmix64's): it spreads every input bit
// over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// WordHashes hashes each word once, for shingling.
func WordHashes(words []string) []uint64 {
	out := make([]uint64, len(words))
	for i, w := range words {
		out[i] = hashWord(w)
	}
	return out
}

// gramBase is the multiplier of the n-gram hash's polynomial (odd, so
// multiplying by it is a bijection of uint64).
const gramBase = 0x9e3779b97f4a7c15

// NGramHash is the hash of the n words starting at hashes[i]: the
// polynomial Σ hashes[i+k]·B^(n-1-k) over uint64, salted by n and mixed
// once. NGramHashes gives every n-gram's at O(1) each by rolling it; a hash
// chained through n mixes cost n times as much, and was most of the
// shingling time.
func NGramHash(hashes []uint64, i, n int) uint64 {
	var p uint64
	for _, w := range hashes[i : i+n] {
		p = p*gramBase + w
	}
	return finishGram(p, n)
}

func finishGram(p uint64, n int) uint64 { return mix64(p ^ uint64(n)*0xd6e8feb86659fd93) }

// NGramHashes appends to dst the hash of every n-gram of hashes, in order
// (NGramHash(hashes, i, n) for each i); none when there are fewer than n.
func NGramHashes(dst []uint64, hashes []uint64, n int) []uint64 {
	for g := range grams(hashes, n) {
		dst = append(dst, g)
	}
	return dst
}

// grams yields NGramHash(hashes, i, n) for each i, rolling the polynomial:
// O(1) a gram whatever n. None when there are fewer than n hashes.
func grams(hashes []uint64, n int) iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		if n <= 0 || len(hashes) < n {
			return
		}
		top := uint64(1) // B^(n-1)
		var p uint64
		for k, w := range hashes[:n] {
			if k > 0 {
				top *= gramBase
			}
			p = p*gramBase + w
		}
		if !yield(finishGram(p, n)) {
			return
		}
		for i := n; i < len(hashes); i++ {
			p = (p-hashes[i-n]*top)*gramBase + hashes[i]
			if !yield(finishGram(p, n)) {
				return
			}
		}
	}
}

// Shingles returns the set of k-word shingles of words as sorted, distinct
// 32-bit hashes (a collision between two distinct shingles of a task is
// about 1 in 4e9 per pair: negligible for a Jaccard estimate). A text of
// fewer than k words (but at least one) is one shingle; no words, none.
func Shingles(words []string, k int) []uint32 {
	return ShinglesOf(WordHashes(words), k)
}

// ShinglesOf is Shingles over word hashes (WordHashes, WordHashesOf).
func ShinglesOf(hs []uint64, k int) []uint32 {
	if len(hs) == 0 {
		return nil
	}
	n := min(k, len(hs))
	out := make([]uint32, 0, len(hs)-n+1)
	for h := range grams(hs, n) {
		out = append(out, uint32(h^(h>>32)))
	}
	radix.Uint32(out, nil)
	return slices.Compact(out)
}

// Jaccard is the exact Jaccard similarity of two sorted, distinct sets.
// Two empty sets are identical (1).
func Jaccard(a, b []uint32) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
