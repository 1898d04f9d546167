package pipeline

// blobArena holds copies of bundles for the output, outside the Go heap
// where the platform allows it (see mapArena).
//
// Held in the heap, 26 MB of small bundles (20,000 tasks) raised the GC's
// heap goal by as much again, and every fresh page the heap grows into is
// a page fault; on the 2-core VMs this project is measured on, a fault on
// never-touched memory costs tens of microseconds. A bump allocator in one
// huge-page mapping takes a handful of faults for the same bytes and does
// not move the GC's goal.
type blobArena struct {
	size  int64
	cur   []byte // the chunk being filled
	used  int64
	unmap []func() error // one per chunk
}

func newBlobArena(size int64) *blobArena { return &blobArena{size: size} }

// add copies b into the arena and returns the copy, or nil when the arena
// is full.
func (a *blobArena) add(b []byte) []byte {
	n := int64(len(b))
	if n == 0 || a.used+n > a.size {
		return nil
	}
	if int64(cap(a.cur)-len(a.cur)) < n {
		chunk, unmap := mapArena(max(min(arenaChunk, a.size-a.used), n))
		a.unmap = append(a.unmap, unmap)
		a.cur = chunk[:0]
	}
	start := len(a.cur)
	a.cur = append(a.cur, b...)
	a.used += n
	return a.cur[start:len(a.cur):len(a.cur)]
}

// release returns the arena's memory; every slice add returned becomes
// invalid.
func (a *blobArena) release() {
	for _, f := range a.unmap {
		_ = f()
	}
	*a = blobArena{size: a.size}
}
