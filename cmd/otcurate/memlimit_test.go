package main

import (
	"io"
	"log/slog"
	"runtime/debug"
	"testing"
)

// TestFitMemoryLimit: the default soft heap limit grows with the pool
// (perTaskHeap a task); one the user chose does not.
func TestFitMemoryLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	for _, c := range []struct {
		name  string
		given bool
		tasks int64
		want  int64
	}{
		{"default, 100K tasks", false, 100_000, 128<<20 + 100_000*perTaskHeap},
		{"default, empty pool", false, 0, 128 << 20},
		{"--memory-limit given", true, 100_000, 128 << 20},
	} {
		g := &globals{memLimit: "128MiB", logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if err := g.applyGCSettings(c.given); err != nil {
			t.Fatal(err)
		}
		g.fitMemoryLimit(c.tasks)
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("%s: limit %d MiB, want %d MiB", c.name, got>>20, c.want>>20)
		}
	}
}
