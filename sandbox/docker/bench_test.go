package docker

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// benchImage is a small local image (mapped by scripts/setup-docker.sh).
const benchImage = "debian:bookworm"

// benchScript is a trivial verifier: write a reward file and print it.
const benchScript = "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && cat /logs/verifier/reward.txt"

// BenchmarkSandboxRun measures the per-run cost of one sandbox that runs a
// trivial test script, through this backend and through the docker CLI:
//
//	api        Start -> Exec(script) -> Stop
//	api+files  Start -> Upload(/tests/test.sh) -> Exec(bash /tests/test.sh)
//	           -> Download(reward.txt) -> Stop (the verifier's sequence
//	           before issue 21, one exec fewer than it had)
//	api+verify Start -> KillAll -> ResetDir x2 -> Exec(test.sh) -> KillAll
//	           -> ReadFile x3 -> Stop (the verifier's sequence now)
//	cli        docker run --rm --network none --init IMAGE bash -c script
//
// Run with e.g. -bench SandboxRun -benchtime 10x; ratio = api / cli.
func BenchmarkSandboxRun(b *testing.B) {
	e := needDocker(b)
	ctx := context.Background()
	if _, err := e.d.cli.ImageInspect(ctx, benchImage); err != nil {
		b.Skipf("image %s missing (scripts/setup-docker.sh makes it): %v", benchImage, err)
	}
	// Both contenders run the same task image, built the way every task
	// environment is (FROM the base image; cached after the first run).
	img, err := e.d.Build(ctx, dockerfileEnv(bookwormFrom, 2*time.Minute))
	if err != nil {
		b.Fatal(err)
	}
	spec := sandbox.StartSpec{Image: img, Labels: map[string]string{sandbox.LabelTask: "bench"}}
	defer func() {
		if _, err := e.d.GC(ctx, sandbox.GCOptions{Run: testRunID}); err != nil {
			b.Errorf("gc: %v", err)
		}
	}()

	b.Run("api", func(b *testing.B) {
		for b.Loop() {
			sb, err := e.d.Start(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: benchScript})
			if err != nil || strings.TrimSpace(string(res.Stdout)) != "1" {
				b.Fatalf("exec: %+v %v", res, err)
			}
			if err := sb.Stop(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})

	// api+files+limits is api+files with task.toml's default limits, as
	// the trial runner starts sandboxes (on a driver without a storage
	// quota this runs the storage watchdog), and the final limit check.
	limited := spec
	limited.Resources = sandbox.Resources{CPUs: 1, MemoryMB: 2048, StorageMB: 10240}
	for _, bc := range []struct {
		name string
		spec sandbox.StartSpec
	}{{"api+files", spec}, {"api+files+limits", limited}} {
		b.Run(bc.name, func(b *testing.B) { benchFiles(b, e.d, bc.spec) })
	}

	// The trial runner's verify sequence since issue 21: the agent's
	// processes killed, /logs/verifier and /tests reset, test.sh run, the
	// processes killed again, the reward files and log tail read back.
	b.Run("api+verify", func(b *testing.B) {
		test := []bundle.Entry{{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o755,
			Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")}}
		for b.Loop() {
			sb, err := e.d.Start(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			if err := sb.KillAll(ctx); err != nil {
				b.Fatal(err)
			}
			if err := sb.ResetDir(ctx, "/logs/verifier", 0o777, nil); err != nil {
				b.Fatal(err)
			}
			if err := sb.ResetDir(ctx, "/tests", 0o755, test); err != nil {
				b.Fatal(err)
			}
			if res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "/tests/test.sh > /logs/verifier/test-stdout.txt 2>&1"}); err != nil || res.ExitCode != 0 {
				b.Fatalf("exec: %+v %v", res, err)
			}
			if err := sb.KillAll(ctx); err != nil {
				b.Fatal(err)
			}
			reward, err := sb.ReadFile(ctx, "/logs/verifier/reward.txt", 64<<10, false)
			if err != nil || strings.TrimSpace(string(reward)) != "1" {
				b.Fatalf("reward %q: %v", reward, err)
			}
			if _, err := sb.ReadFile(ctx, "/logs/verifier/reward.json", 64<<10, false); !errors.Is(err, sandbox.ErrNotFound) {
				b.Fatalf("reward.json: %v", err)
			}
			if _, err := sb.ReadFile(ctx, "/logs/verifier/test-stdout.txt", 8<<10, true); err != nil {
				b.Fatal(err)
			}
			if err := sb.Stop(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("cli", func(b *testing.B) {
		docker, err := exec.LookPath("docker")
		if err != nil {
			b.Skip("no docker CLI")
		}
		args := []string{"run", "--rm", "--network", "none", "--init", "--pids-limit", "4096",
			"--security-opt", "no-new-privileges", "--label", sandbox.LabelTool + "=1", "--label", sandbox.LabelRun + "=" + testRunID,
			img.Ref, "bash", "-c", benchScript}
		for b.Loop() {
			out, err := exec.CommandContext(ctx, docker, args...).CombinedOutput()
			if err != nil || !bytes.Equal(bytes.TrimSpace(out), []byte("1")) {
				b.Fatalf("docker run: %v: %s", err, out)
			}
		}
	})
}

// benchFiles is the verifier's real sequence on sandboxes of spec.
func benchFiles(b *testing.B, d *Engine, spec sandbox.StartSpec) {
	ctx := context.Background()
	test := []bundle.Entry{{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o644,
		Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")}}
	for b.Loop() {
		sb, err := d.Start(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := sb.Upload(ctx, "/tests", test); err != nil {
			b.Fatal(err)
		}
		if res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "bash /tests/test.sh"}); err != nil || res.ExitCode != 0 {
			b.Fatalf("exec: %+v %v", res, err)
		}
		reward, err := sb.Download(ctx, "/logs/verifier/reward.txt", 64)
		if err != nil || strings.TrimSpace(string(reward)) != "1" {
			b.Fatalf("reward %q: %v", reward, err)
		}
		if le := sandbox.Exceeded(sb); le != nil {
			b.Fatalf("limit: %v", le)
		}
		if err := sb.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
