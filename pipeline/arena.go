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
	// populated is how much of cur is known to be backed by memory;
	// noPopulate is set once the platform refused to populate ahead.
	populated  int
	noPopulate bool
}

// populateStep is how far ahead of the bump pointer add asks for the
// chunk's pages, in one system call instead of one page fault per 4 KB
// page: copying 25 MB of 7 KB bundles into fresh pages took 16-19 ms with
// a fault per page, 10-11 ms populating 256 KB at a time (2-core VM).
const populateStep = 256 << 10

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
		a.cur, a.populated = chunk[:0], 0
	}
	start := len(a.cur)
	if end := start + int(n); end > a.populated && !a.noPopulate {
		to := min(cap(a.cur), (end+populateStep-1)/populateStep*populateStep)
		if populate(a.cur[a.populated:to:to]) {
			a.populated = to
		} else {
			a.noPopulate = true // the pages fault in one by one as they are written
		}
	}
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
