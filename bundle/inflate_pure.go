//go:build !cgo || purego

package bundle

// wholeInflateAvailable is false in the pure-Go build: every blob takes
// the streaming inflater.
const wholeInflateAvailable = false

func inflateGzip(blob, out []byte) (n, used int, ok bool) { return 0, 0, false }
