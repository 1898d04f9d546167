package pipeline

// blobArena holds copies of bundles for the output, outside the Go heap
// where the platform allows it (see mapArena).
//
// Held in the heap, 26 MB of small bundles (20,000 tasks) raised the GC's
// heap goal by as much again. A bump allocator in one anonymous mapping
// does not move the GC's goal. (It used to ask for huge pages, to take a
// handful of faults instead of thousands; on the 2-core VMs this project
// is measured on, each 2 MB fault cost milliseconds, from zeroing and
// compaction, and 4 KB pages were 2-6% faster end to end.)
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
