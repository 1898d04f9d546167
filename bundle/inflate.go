package bundle

import (
	"encoding/binary"
	"sync"
)

// maxWholeInflate bounds the buffer a blob may be inflated into in one
// call; bundles that state a larger size stream instead.
const maxWholeInflate = 4 << 20

// inflateBufs holds *[]byte output buffers for inflateWhole.
var inflateBufs sync.Pool

// inflateWhole inflates a blob held in memory in one call, when the build
// has a whole-buffer inflater (libdeflate: about twice the streaming rate
// on task-sized bundles) and the blob is one plain gzip member whose stated
// size is within both max and maxWholeInflate. raw is valid until buf is
// handed back with inflateBufs.Put.
//
// It never decides a defect: ok is false for anything it does not accept
// outright (a bad or header-CRC'd header, a corrupt stream, a wrong CRC or
// size, a second member or trailing bytes, a stated size that lies), and
// the caller streams the blob again with the Go inflater, which enforces
// the limits as it goes and names the defect. A lying size costs at most
// maxWholeInflate of memory.
func inflateWhole(blob []byte, max int64) (raw []byte, buf *[]byte, ok bool) {
	// 10-byte header + at least an empty deflate block + 8-byte trailer.
	if !wholeInflateAvailable || len(blob) < 20 {
		return nil, nil, false
	}
	// CM must be deflate; FHCRC (0x02) and the reserved bits (0xe0) are
	// left to the Go reader, which checks them (libdeflate skips FHCRC
	// without checking it).
	if blob[0] != 0x1f || blob[1] != 0x8b || blob[2] != 8 || blob[3]&0xe2 != 0 {
		return nil, nil, false
	}
	size := int64(binary.LittleEndian.Uint32(blob[len(blob)-4:])) // ISIZE: a hint, checked by libdeflate
	if size == 0 || size > max || size > maxWholeInflate {
		return nil, nil, false
	}
	bufp, _ := inflateBufs.Get().(*[]byte)
	if bufp == nil || int64(cap(*bufp)) < size {
		c := int64(64 << 10)
		for c < size {
			c *= 2
		}
		b := make([]byte, c)
		bufp = &b
	}
	out := (*bufp)[:size]
	n, used, ok := inflateGzip(blob, out)
	if !ok || used != len(blob) || int64(n) != size {
		inflateBufs.Put(bufp)
		return nil, nil, false
	}
	return out[:n], bufp, true
}
