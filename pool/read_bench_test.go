package pool_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/otcurate/otcurate/pool"
)

// BenchmarkParquetEach reads a pool named by OTCURATE_BENCH_POOL.
func BenchmarkParquetEach(b *testing.B) {
	name := os.Getenv("OTCURATE_BENCH_POOL")
	if name == "" {
		b.Skip("set OTCURATE_BENCH_POOL")
	}
	src, err := pool.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		n := 0
		if err := src.Each(context.Background(), nil, func(r pool.Record) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriterSmallRows writes 5,000 rows of 1.3 KB (the generated
// pool's mean bundle) with the dataset writer's settings.
func BenchmarkWriterSmallRows(b *testing.B) {
	blob := make([]byte, 1300)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	dir := b.TempDir()
	b.SetBytes(5000 * int64(len(blob)))
	for i := 0; i < b.N; i++ {
		w, err := pool.Create(dir+"/out.parquet", pool.WriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for r := 0; r < 5000; r++ {
			if err := w.Write("task-"+strconv.Itoa(r), blob); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
