package pipeline

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// arenaChunk is the arena's mapping size: the whole budget at once, since
// untouched pages of a mapping cost nothing.
const arenaChunk = retainBlobBytes

// mapArena maps n bytes of anonymous memory (NORESERVE: pages are only
// backed once written) and falls back to the Go heap when mapping fails.
func mapArena(n int64) ([]byte, func() error) {
	mem, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		return make([]byte, 0, n), func() error { return nil }
	}
	return mem, func() error { return syscall.Munmap(mem) }
}

// populate backs mem's pages with memory ahead of the writes
// (MADV_POPULATE_WRITE, Linux 5.14 and later); false when the kernel
// cannot, and the pages are faulted in by the writes instead.
func populate(mem []byte) bool {
	if len(mem) == 0 {
		return true
	}
	return unix.Madvise(mem, unix.MADV_POPULATE_WRITE) == nil
}
