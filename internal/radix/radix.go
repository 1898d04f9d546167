// Package radix sorts by least-significant-digit radix: the sets,
// tables and LSH bands of the similarity stages, where a comparison sort
// was most of their cost.
package radix

import "slices"

// minLen is the length from which Uint32 radix-sorts: below it,
// slices.Sort is as fast.
const minLen = 256

// Uint32 sorts a through tmp (at least as long as a; nil: allocated).
// Slices of fewer than 65,536 values take four passes of 8 bits (a task's
// shingle set: 4-5 times as fast as slices.Sort), longer ones two passes
// of 16 bits (millions of values: seven times as fast). A pass whose
// digit is the same for every value is skipped. Stable's passes,
// specialised: every digit's histogram in one scan and no key function
// (called per value, it tripled the time of a task's shingling).
func Uint32(a, tmp []uint32) {
	if len(a) < minLen {
		slices.Sort(a)
		return
	}
	if len(tmp) < len(a) {
		tmp = make([]uint32, len(a))
	}
	src, dst := a, tmp[:len(a)]
	if len(a) < 1<<16 {
		// Fixed 256-entry histograms, indexed by a byte: no bounds checks.
		var count [4][256]int
		for _, v := range a {
			count[0][v&0xff]++
			count[1][v>>8&0xff]++
			count[2][v>>16&0xff]++
			count[3][v>>24]++
		}
		for pass := range 4 {
			c, shift := &count[pass], 8*pass
			if c[byte(src[0]>>shift)] == len(src) {
				continue // one digit: the pass would move nothing
			}
			sum := 0
			for i, n := range c {
				c[i], sum = sum, sum+n
			}
			for _, v := range src {
				k := byte(v >> shift)
				dst[c[k]] = v
				c[k]++
			}
			src, dst = dst, src
		}
	} else {
		count := new([1 << 16]int32)
		for shift := 0; shift < 32; shift += 16 {
			clear(count[:])
			for _, v := range src {
				count[uint16(v>>shift)]++
			}
			if int(count[uint16(src[0]>>shift)]) == len(src) {
				continue
			}
			sum := int32(0)
			for i, n := range count {
				count[i], sum = sum, sum+n
			}
			for _, v := range src {
				k := uint16(v >> shift)
				dst[count[k]] = v
				count[k]++
			}
			src, dst = dst, src
		}
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}

// Stable sorts a by key (its low keyBits bits) through tmp (at least as
// long as a), keeping the order of equal keys: rows made in order of a
// second key come out ordered by key, then by it. Passes of 16 bits.
func Stable[T any](a, tmp []T, keyBits int, key func(T) uint64) {
	sortBy(a, tmp[:len(a)], 16, keyBits, key)
}

func sortBy[T any](a, tmp []T, bits, keyBits int, key func(T) uint64) {
	if len(a) == 0 {
		return
	}
	count := make([]int32, 1<<bits)
	mask := uint64(len(count) - 1)
	src, dst := a, tmp
	for shift := 0; shift < keyBits; shift += bits {
		clear(count)
		for _, v := range src {
			count[key(v)>>shift&mask]++
		}
		if int(count[key(src[0])>>shift&mask]) == len(src) {
			continue // one digit: the pass would move nothing
		}
		sum := int32(0)
		for i, c := range count {
			count[i], sum = sum, sum+c
		}
		for _, v := range src {
			k := key(v) >> shift & mask
			dst[count[k]] = v
			count[k]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}
