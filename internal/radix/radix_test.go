package radix

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortUint32: the radix sort agrees with slices.Sort on long and short
// slices, including ones whose high bytes are all equal.
func TestSortUint32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		n    int
		mask uint32
	}{{0, ^uint32(0)}, {10, ^uint32(0)}, {minLen, ^uint32(0)}, {5000, ^uint32(0)}, {5000, 0xff}, {4000, 0xff00ff00}} {
		a := make([]uint32, c.n)
		for i := range a {
			a[i] = r.Uint32() & c.mask
		}
		want := slices.Clone(a)
		slices.Sort(want)
		Uint32(a, nil)
		if !slices.Equal(a, want) {
			t.Errorf("n %d mask %x: radix sort differs from slices.Sort", c.n, c.mask)
		}
	}
}

// TestRadixSort: the 16-bit passes of long slices, through a given buffer.
func TestRadixSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 1000, 70000} {
		a := make([]uint32, n)
		for i := range a {
			a[i] = r.Uint32()
			if i%3 == 0 {
				a[i] &= 0xff // repeated values and an empty high half
			}
		}
		want := slices.Clone(a)
		slices.Sort(want)
		Uint32(a, make([]uint32, n))
		if !slices.Equal(a, want) {
			t.Errorf("n=%d: not sorted", n)
		}
	}
}
