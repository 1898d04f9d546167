// Package buflist recycles byte buffers of one capacity between
// goroutines.
package buflist

// List recycles byte buffers of one capacity between the goroutine
// that fills them and the one that is done with them (the engine's blob
// slabs, the decisions reader's chunks). Fresh memory costs page faults
// that, on the VMs this is measured on, exceed the work done in it, and
// sync.Pool loses its buffers at every GC. Get never waits: when no
// buffer is free it makes one; Put keeps up to keep buffers and leaves the
// rest to the GC.
type List struct {
	free chan []byte
	size int
}

// New makes a list of buffers of size bytes that keeps up to keep free
// ones.
func New(size, keep int) *List {
	return &List{free: make(chan []byte, keep), size: size}
}

// Get returns a buffer of length n. A request over the list's size gets a
// buffer of its own, which Put will not keep.
func (l *List) Get(n int) []byte {
	if n > l.size {
		return make([]byte, n)
	}
	select {
	case b := <-l.free:
		return b[:n]
	default:
		return make([]byte, n, l.size)
	}
}

// Put hands a buffer back; nil and buffers not made by get are ignored.
func (l *List) Put(b []byte) {
	if cap(b) != l.size {
		return
	}
	select {
	case l.free <- b[:0]:
	default:
	}
}
