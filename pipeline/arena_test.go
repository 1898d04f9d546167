package pipeline

import (
	"bytes"
	"testing"
)

func TestBlobArena(t *testing.T) {
	for _, c := range []struct {
		name  string
		size  int64
		blobs []int // sizes added in turn
		held  int   // how many fit
	}{
		{"one small", 1 << 20, []int{100}, 1},
		{"across populate steps", 4 << 20, []int{200 << 10, 200 << 10, 200 << 10, 7000, 300 << 10}, 5},
		{"full", 64 << 10, []int{40 << 10, 40 << 10, 10 << 10}, 2},
		{"empty blob not held", 1 << 20, []int{0}, 0},
		{"bigger than a step", 2 << 20, []int{1<<20 + 3}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newBlobArena(c.size)
			defer a.release()
			var want, got [][]byte
			for i, n := range c.blobs {
				b := bytes.Repeat([]byte{byte(i + 1)}, n)
				if cp := a.add(b); cp != nil {
					want, got = append(want, b), append(got, cp)
				}
			}
			if len(got) != c.held {
				t.Fatalf("held %d blobs, want %d", len(got), c.held)
			}
			for i := range got { // later adds must not have overwritten earlier copies
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("copy %d differs from its blob", i)
				}
				if cap(got[i]) != len(got[i]) {
					t.Errorf("copy %d has spare capacity %d: an append would write into the next copy", i, cap(got[i])-len(got[i]))
				}
			}
			if a.populated < len(a.cur) && !a.noPopulate {
				t.Errorf("populated %d bytes, %d written", a.populated, len(a.cur))
			}
		})
	}
}

// BenchmarkBlobArena copies 25 MB of 7 KB bundles (a 3,566-task pool of
// real pools' sizes) into a fresh arena and releases it, with the pages
// populated ahead and with a fault per page.
func BenchmarkBlobArena(b *testing.B) {
	blob := bytes.Repeat([]byte{7}, 7000)
	for _, fault := range []bool{false, true} {
		name := "populate"
		if fault {
			name = "fault"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(25 << 20)
			for i := 0; i < b.N; i++ {
				a := newBlobArena(retainBlobBytes)
				a.noPopulate = fault
				for n := 0; n < 25<<20; n += len(blob) {
					if a.add(blob) == nil {
						b.Fatal("arena full")
					}
				}
				a.release()
			}
		})
	}
}
