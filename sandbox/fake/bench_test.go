package fake

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// benchScript is a trivial verifier: write a reward file and print it.
const benchScript = "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && cat /logs/verifier/reward.txt"

// BenchmarkSandboxRun measures one sandbox's cycle on the fake, as the
// Docker backend's benchmark of the same name does (median-ms is the
// median of the iterations):
//
//	api        Start -> Exec(script) -> Stop
//	api+files  Start -> Upload(/tests/test.sh) -> Exec(bash /tests/test.sh)
//	           -> Download(reward.txt) -> Stop (the verifier's sequence)
func BenchmarkSandboxRun(b *testing.B) {
	be, err := New(Options{RunID: "bench", Dir: b.TempDir()})
	if err != nil {
		b.Skip(err)
	}
	defer be.Close()
	ctx := context.Background()
	img, err := be.Build(ctx, env("FROM debian:bookworm\nWORKDIR /app\n"))
	if err != nil {
		b.Fatal(err)
	}
	spec := sandbox.StartSpec{Image: img}
	cycle := func(b *testing.B, files bool) {
		var times []time.Duration
		for b.Loop() {
			t0 := time.Now()
			sb, err := be.Start(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			if files {
				test := []bundle.Entry{{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o644,
					Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")}}
				if err := sb.Upload(ctx, "/tests", test); err != nil {
					b.Fatal(err)
				}
				if res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "bash /tests/test.sh"}); err != nil || res.ExitCode != 0 {
					b.Fatalf("exec: %+v %v", res, err)
				}
				if reward, err := sb.Download(ctx, "/logs/verifier/reward.txt", 64); err != nil || strings.TrimSpace(string(reward)) != "1" {
					b.Fatalf("reward %q: %v", reward, err)
				}
			} else if res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: benchScript}); err != nil || strings.TrimSpace(string(res.Stdout)) != "1" {
				b.Fatalf("exec: %+v %v", res, err)
			}
			if err := sb.Stop(ctx); err != nil {
				b.Fatal(err)
			}
			times = append(times, time.Since(t0))
		}
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
	}
	b.Run("api", func(b *testing.B) { cycle(b, false) })
	b.Run("api+files", func(b *testing.B) { cycle(b, true) })
}
