package pool

import "os"

// writebackEvery is how many bytes the dataset writer lets accumulate
// before it asks the kernel to start writing them to disk.
const writebackEvery = 4 << 20

// writebackFile is the dataset file with early writeback: every
// writebackEvery bytes it starts (without waiting for) the writeback of
// what was written, so the fsync in Close waits for the last few
// megabytes instead of the whole file. On a 26 MB output that fsync was
// ~25 ms at the end of every build.
type writebackFile struct {
	f       *os.File
	off     int64 // bytes written
	started int64 // bytes whose writeback was started
}

func (w *writebackFile) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if w.off-w.started >= writebackEvery {
		startWriteback(w.f, w.started, w.off-w.started) // advisory: errors surface at fsync
		w.started = w.off
	}
	return n, err
}
