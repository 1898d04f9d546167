package pipeline

import "syscall"

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
