package pipeline_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
)

// BenchmarkBuildValidateDedup measures the engine on 5,000 small tasks,
// output parquet included. Compare runs with benchstat.
func BenchmarkBuildValidateDedup(b *testing.B) {
	src, err := pool.Open(manyTasks(b, 5000))
	if err != nil {
		b.Fatal(err)
	}
	stages, _ := filters.Build([]string{"validate", "dedup"}, filters.Options{})
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _, err := pipeline.Build(context.Background(), pipeline.BuildOptions{Source: src, Stages: stages,
			RunDir: filepath.Join(dir, "run"), Output: filepath.Join(dir, "out.parquet")})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(5000*b.N)/b.Elapsed().Seconds(), "tasks/s")
}
