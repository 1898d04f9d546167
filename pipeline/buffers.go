package pipeline

// bufferList recycles byte buffers of one capacity between the goroutine
// that fills them and the one that is done with them (the engine's blob
// slabs, the decisions reader's chunks). Fresh memory costs page faults
// that, on the VMs this is measured on, exceed the work done in it, and
// sync.Pool loses its buffers at every GC. get never waits: when no
// buffer is free it makes one; put keeps up to keep buffers and leaves the
// rest to the GC.
type bufferList struct {
	free chan []byte
	size int
}

func newBufferList(size, keep int) *bufferList {
	return &bufferList{free: make(chan []byte, keep), size: size}
}

// get returns a buffer of length n. A request over the list's size gets a
// buffer of its own, which put will not keep.
func (l *bufferList) get(n int) []byte {
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

// put hands a buffer back; nil and buffers not made by get are ignored.
func (l *bufferList) put(b []byte) {
	if cap(b) != l.size {
		return
	}
	select {
	case l.free <- b[:0]:
	default:
	}
}
