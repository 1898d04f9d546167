package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/otcurate/otcurate/bench/internal/realsize"
)

// runRealistic times gzip -dc, validate and build --stages validate,dedup
// on an n-task pool padded to real pools' sizes, interleaved, and prints
// medians of wall and CPU time and their ratios to gzip -dc.
func runRealistic(bin string, n, rounds int, keep bool, cpuProfile string, sources float64) error {
	work, err := os.MkdirTemp("", "otcurate-bench-real-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("work directory:", work)
	} else {
		defer os.RemoveAll(work)
	}
	bin, _ = filepath.Abs(bin)
	base, poolFile := filepath.Join(work, "base.parquet"), filepath.Join(work, "pool.parquet")
	fmt.Printf("generating %d base tasks (gen-pool, no defects) and padding %d tasks to real pools' sizes...\n", min(n, 5000), n)
	if err := sh(bin, "gen-pool", "-n", fmt.Sprint(min(n, 5000)), "--seed", "7", "--rates", "none", "-o", base, "--log-level", "warn"); err != nil {
		return err
	}
	st, err := realsize.Pad(context.Background(), base, poolFile, n, realsize.Options{Seed: 7, Sources: sources})
	if err != nil {
		return err
	}
	fmt.Println("pool:", st)
	gzFile := filepath.Join(work, "blobs.gz")
	count, compressed, err := exportBlobs(poolFile, gzFile, filepath.Join(work, "blobs.framed"))
	if err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(work, "blobs.framed"))
	fmt.Printf("task_binary: %d tasks, %.1f MB (mean %.1f KB)\n", count, float64(compressed)/1e6, float64(compressed)/float64(count)/1024)
	if rounds <= 0 {
		return nil // the pool's figures only
	}
	fmt.Printf("load average at start: %s\n\n", loadavg())

	out := filepath.Join(work, "out")
	buildArgv := []string{bin, "build", "--pool", poolFile, "-o", filepath.Join(out, "tasks.parquet"),
		"--run-dir", filepath.Join(out, "run"), "--stages", "validate,dedup", "--log-level", "warn", "--no-progress"}
	contenders := []struct {
		name string
		argv []string
	}{
		{"gzip -dc (1 process)", []string{"sh", "-c", "gzip -dc " + gzFile + " > /dev/null"}},
		{"otcurate validate", []string{bin, "validate", "--pool", poolFile, "--log-level", "warn", "--no-progress"}},
		{"build validate,dedup", buildArgv},
	}
	walls := make([][]float64, len(contenders))
	cpus := make([][]float64, len(contenders))
	for r := 0; r < rounds; r++ {
		for i, c := range contenders { // interleaved, so drift hits all alike
			_ = os.RemoveAll(out)
			syscall.Sync() // untimed: the previous build's writeback
			wall, cpu, err := timedCPU(c.argv...)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			walls[i] = append(walls[i], wall.Seconds())
			cpus[i] = append(cpus[i], cpu.Seconds())
			fmt.Printf("round %d  %-22s %7.3f s wall %7.3f s CPU\n", r+1, c.name, wall.Seconds(), cpu.Seconds())
		}
	}
	fmt.Printf("\nload average at end: %s\n", loadavg())
	fmt.Printf("%-22s %10s %10s %10s %11s %11s\n", "contender", "wall s", "CPU s", "tasks/s", "rate×gzip", "CPU÷gzip")
	w0, c0 := medianOf(walls[0]), medianOf(cpus[0])
	for i, c := range contenders {
		w, cpu := medianOf(walls[i]), medianOf(cpus[i])
		fmt.Printf("%-22s %10.3f %10.3f %10.0f %10.2fx %10.2fx\n", c.name, w, cpu, float64(count)/w, w0/w, cpu/c0)
	}
	fmt.Printf("\n(medians of %d interleaved rounds; rate×gzip = gzip -dc's wall ÷ the contender's: target ≥ 1.5x for build;\n"+
		" CPU÷gzip = the contender's CPU ÷ gzip's: ≤ 2 means two busy cores can beat gzip's one by the wall)\n", rounds)

	if cpuProfile != "" {
		_ = os.RemoveAll(out)
		argv := append(append([]string(nil), buildArgv...), "--cpuprofile", cpuProfile)
		if _, _, err := timedCPU(argv...); err != nil {
			return fmt.Errorf("profiled build: %w", err)
		}
		fmt.Println("CPU profile of one build:", cpuProfile)
	}
	return nil
}

// timedCPU runs a command and returns its wall time and its CPU time (user
// and system, its waited-for children included).
func timedCPU(argv ...string) (time.Duration, time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, 0, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return d, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
