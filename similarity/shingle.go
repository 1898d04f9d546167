package similarity

import (
	"slices"
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

// NGramHash is the hash of the n words starting at hashes[i].
func NGramHash(hashes []uint64, i, n int) uint64 {
	h := uint64(0x9e3779b97f4a7c15) ^ uint64(n)
	for _, w := range hashes[i : i+n] {
		h = mix64(h ^ w)
	}
	return h
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
	for i := 0; i+n <= len(hs); i++ {
		h := NGramHash(hs, i, n)
		out = append(out, uint32(h^(h>>32)))
	}
	slices.Sort(out)
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
