package pool

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback initiates writeback of a file range without waiting
// (sync_file_range with SYNC_FILE_RANGE_WRITE).
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
