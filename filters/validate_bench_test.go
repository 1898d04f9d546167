package filters

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/poolgen"
)

// BenchmarkValidateGenerated runs the validate stage over generated
// pymethods- and nl2bash-like bundles (no defects): the per-task work of
// `make bench`'s validate+dedup pass, without the engine around it.
func BenchmarkValidateGenerated(b *testing.B) {
	var blobs [][]byte
	err := poolgen.Generate(context.Background(), poolgen.Options{N: 500, Seed: 7, Rates: poolgen.NoDefects()},
		func(t poolgen.Task) error {
			var buf bytes.Buffer
			if err := bundle.Encode(&buf, t.Entries); err != nil {
				return err
			}
			blobs = append(blobs, buf.Bytes())
			return nil
		})
	if err != nil {
		b.Skipf("generating tasks: %v", err)
	}
	var total int64
	for _, bl := range blobs {
		total += int64(len(bl))
	}
	for _, v := range []Validate{{}, {OwnReadsOnly: true}} {
		b.Run(fmt.Sprintf("own-reads-only=%v", v.OwnReadsOnly), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(total / int64(len(blobs)))
			for i := 0; i < b.N; i++ {
				it := &pipeline.Item{Task: &pipeline.Task{}, Record: pool.Record{Blob: blobs[i%len(blobs)]}}
				if out := v.Process(context.Background(), it); out.Verdict != pipeline.Keep {
					b.Fatalf("task %d: %s %s", i%len(blobs), out.Reason, out.Detail)
				}
			}
		})
	}
}
