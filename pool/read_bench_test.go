package pool_test

import (
	"context"
	"os"
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
