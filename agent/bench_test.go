package agent_test

import (
	"context"
	"sort"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
)

// BenchmarkHarnessTurn measures the harness's own cost per turn: the
// policy answers instantly and each turn runs the shell no-op `:`, so the
// turn's time is the harness (prompt building, parsing, bookkeeping) plus
// the terminal round trip (typing the keys, reading the echo and the next
// prompt). Reported: median and p90 ms per turn (target ≤ 50 ms), and
// the once-per-episode cost of opening the shell.
func BenchmarkHarnessTurn(b *testing.B) {
	d, runID := sandboxtest.Backend(b, "test-agent-")
	tk := task(b, "Run no-ops.\n")
	ctx := context.Background()
	envFiles, _ := tk.Bundle.Entries("environment")
	img, err := d.Build(ctx, sandbox.Environment{Hash: tk.Bundle.EnvHash, Files: envFiles, Task: tk.Path})
	if err != nil {
		b.Fatal(err)
	}
	sb, err := d.Start(ctx, sandbox.StartSpec{Image: img, Workdir: "/app", Labels: map[string]string{sandbox.LabelRun: runID}})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Stop(context.Background())
	const turns = 50
	pol := &script{replies: []string{reply(false, ":\n", 10.0)}}
	h := &agent.Harness{Policy: pol}
	var perTurn, setup []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr, err := h.Run(ctx, sb, agent.Episode{Task: tk.Path, Instruction: "Run no-ops.", Workdir: "/app"}, agent.Config{MaxTurns: turns})
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tr.Turns {
			perTurn = append(perTurn, 1000*(t.ExecSeconds+t.HarnessSeconds))
		}
		setup = append(setup, 1000*(tr.Seconds-tr.ModelSeconds()-tr.ExecSeconds()-tr.HarnessSeconds()))
	}
	b.StopTimer()
	sort.Float64s(perTurn)
	b.ReportMetric(perTurn[len(perTurn)/2], "ms/turn-median")
	b.ReportMetric(perTurn[len(perTurn)*9/10], "ms/turn-p90")
	sort.Float64s(setup)
	b.ReportMetric(setup[len(setup)/2], "ms/episode-setup")
	b.ReportMetric(0, "ns/op")
}
