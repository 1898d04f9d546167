//go:build cgo && !purego

package bundle

/*
#cgo linux LDFLAGS: -l:libdeflate.a
#cgo !linux LDFLAGS: -ldeflate
#include <libdeflate.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// wholeInflateAvailable reports whether inflateWhole can succeed at all:
// true in this build, which links libdeflate (the default; build with the
// purego tag or CGO_ENABLED=0 for a pure-Go binary without it).
const wholeInflateAvailable = true

// decompressor owns one libdeflate decompressor (a few KB of C memory,
// freed by a cleanup when the pool lets it go).
type decompressor struct {
	d *C.struct_libdeflate_decompressor
}

var decompressors = sync.Pool{New: func() any {
	d := &decompressor{d: C.libdeflate_alloc_decompressor()}
	if d.d == nil {
		return (*decompressor)(nil)
	}
	runtime.AddCleanup(d, func(p *C.struct_libdeflate_decompressor) { C.libdeflate_free_decompressor(p) }, d.d)
	return d
}}

// inflateGzip inflates one gzip member held whole in blob into out with
// libdeflate, which checks the member's CRC-32 and size. It returns the
// inflated length and the compressed bytes consumed; ok is false on any
// failure (corrupt data, or out too small), with no detail: the caller
// then takes the streaming path, which classifies the defect. inflateWhole
// is its one caller and hands it a non-empty blob and buffer.
func inflateGzip(blob, out []byte) (n, used int, ok bool) {
	d, _ := decompressors.Get().(*decompressor)
	if d == nil {
		return 0, 0, false
	}
	defer decompressors.Put(d)
	var inUsed, outN C.size_t
	r := C.libdeflate_gzip_decompress_ex(d.d,
		unsafe.Pointer(unsafe.SliceData(blob)), C.size_t(len(blob)),
		unsafe.Pointer(unsafe.SliceData(out)), C.size_t(len(out)),
		&inUsed, &outN)
	if r != C.LIBDEFLATE_SUCCESS {
		return 0, 0, false
	}
	return int(outN), int(inUsed), true
}
