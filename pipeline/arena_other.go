//go:build !linux

package pipeline

// arenaChunk is the size of the heap chunks the arena grows by where it
// cannot map memory itself.
const arenaChunk = 4 << 20

func mapArena(n int64) ([]byte, func() error) {
	return make([]byte, 0, n), func() error { return nil }
}

// populate does nothing where the arena lives in the Go heap.
func populate([]byte) bool { return false }
