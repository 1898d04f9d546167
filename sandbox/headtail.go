package sandbox

// HeadTail is an io.Writer that keeps the first headCap and the last
// tailCap bytes written to it and drops the middle, so its memory stays
// bounded whatever the volume of output.
type HeadTail struct {
	headCap int
	head    []byte
	ring    []byte // tail storage, allocated lazily, len == tailCap
	tailCap int
	next    int // write position in ring
	tailLen int // valid bytes in ring
	total   int64
}

// NewHeadTail keeps max bytes in all: half head, half tail.
func NewHeadTail(max int) *HeadTail {
	h := max / 2
	return &HeadTail{headCap: h, tailCap: max - h}
}

// NewTail keeps only the last max bytes.
func NewTail(max int) *HeadTail { return &HeadTail{tailCap: max} }

// Write never fails.
func (b *HeadTail) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	if room := b.headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || b.tailCap == 0 {
		return n, nil
	}
	if b.ring == nil {
		b.ring = make([]byte, b.tailCap)
	}
	if len(p) >= b.tailCap {
		copy(b.ring, p[len(p)-b.tailCap:])
		b.next, b.tailLen = 0, b.tailCap
		return n, nil
	}
	k := copy(b.ring[b.next:], p)
	copy(b.ring, p[k:])
	b.next = (b.next + len(p)) % b.tailCap
	b.tailLen = min(b.tailLen+len(p), b.tailCap)
	return n, nil
}

// Truncated reports whether bytes were dropped.
func (b *HeadTail) Truncated() bool { return b.total > int64(len(b.head)+b.tailLen) }

// Total is the number of bytes written, kept or not.
func (b *HeadTail) Total() int64 { return b.total }

// Bytes returns the kept head followed by the kept tail.
func (b *HeadTail) Bytes() []byte {
	out := make([]byte, 0, len(b.head)+b.tailLen)
	out = append(out, b.head...)
	if b.tailLen < b.tailCap {
		return append(out, b.ring[:b.tailLen]...)
	}
	out = append(out, b.ring[b.next:]...)
	return append(out, b.ring[:b.next]...)
}

// String returns Bytes as a string.
func (b *HeadTail) String() string { return string(b.Bytes()) }
