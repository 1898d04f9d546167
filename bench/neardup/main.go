// Command neardup benchmarks the near_dup and decontam stages against the
// static pass they join, side by side on one realistic pool: gen-pool tasks
// padded to real pools' sizes (environment files drawn log-normally around
// a 20 KB median, so the mean is about 36 KB inflated, with a long tail up
// to 2 MB; each instruction and test file extended with words of its own so
// instructions differ as real ones do). Contenders, interleaved per round:
//
//	static:     build --stages validate,dedup,lint,select
//	+near_dup:  build --stages validate,dedup,near_dup,lint,select
//	+both:      the same with decontam --against a 500-task benchmark pool
//
// It prints medians, ratios to the static pass and peak RSS; it asserts
// nothing (targets live in the README and issue 22).
//
//	go run ./bench/neardup [-n 20000] [-rounds 3] [-bin bin/otcurate] [-against OTHER_BINARY] [-base gen-pool.parquet]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
)

func main() {
	n := flag.Int("n", 20000, "tasks in the pool")
	rounds := flag.Int("rounds", 3, "timed rounds per contender (median reported)")
	bin := flag.String("bin", "bin/otcurate", "otcurate binary")
	against := flag.String("against", "", "a second otcurate binary (e.g. main's) whose contenders run interleaved with -bin's, each compared with its own static pass")
	base := flag.String("base", "", "gen-pool parquet to pad (default: gen-pool -n 5000 --rates none)")
	reuse := flag.Bool("reuse", false, "use WORK/pool.parquet and WORK/benchmark.parquet as they are (made by an earlier -pad-only run)")
	work := flag.String("work", "", "work directory (default: a temporary one, removed)")
	padOnly := flag.Bool("pad-only", false, "write WORK/pool.parquet and WORK/benchmark.parquet, then stop (for /usr/bin/time -v runs)")
	flag.Parse()
	if *padOnly {
		rounds = new(int)
	}
	bins := []string{*bin}
	if *against != "" {
		bins = append(bins, *against)
	}
	if err := run(bins, *base, *work, *n, *rounds, *reuse); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bins []string, base, work string, n, rounds int, reuse bool) error {
	if work == "" {
		w, err := os.MkdirTemp("", "otcurate-neardup-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(w)
		work = w
	}
	for i := range bins {
		bins[i], _ = filepath.Abs(bins[i])
	}
	bin := bins[0]
	if base == "" && !reuse {
		base = filepath.Join(work, "base.parquet")
		if err := sh(bin, "gen-pool", "-n", "5000", "--seed", "7", "--rates", "none", "-o", base, "--log-level", "warn"); err != nil {
			return err
		}
	}
	poolFile, benchFile := filepath.Join(work, "pool.parquet"), filepath.Join(work, "benchmark.parquet")
	if reuse {
		fmt.Printf("pool: %s (reused)\n", poolFile)
	} else if st, err := pad(base, poolFile, benchFile, n); err != nil {
		return err
	} else {
		fmt.Printf("pool: %d tasks, mean %.1f KB compressed, %.1f KB inflated (p50 %.1f, p99 %.1f KB inflated, max %.0f KB)\n",
			n, st.meanGz/1024, st.meanRaw/1024, st.p50/1024, st.p99/1024, st.max/1024)
	}
	if rounds == 0 {
		return nil
	}
	static := "validate,dedup,lint,select"
	stages := []struct {
		name string
		args []string
	}{
		{"static", []string{"--stages", static}},
		{"+near_dup", []string{"--stages", "validate,dedup,near_dup,lint,select"}},
		{"+near_dup+decontam", []string{"--stages", "validate,dedup,near_dup,decontam,lint,select", "--against", benchFile}},
	}
	type contender struct {
		name, bin string
		args      []string
	}
	var contenders []contender
	for bi, b := range bins {
		for _, st := range stages {
			name := st.name
			if len(bins) > 1 {
				name = fmt.Sprintf("bin%d %s", bi+1, name)
			}
			contenders = append(contenders, contender{name, b, st.args})
		}
	}
	for bi, b := range bins {
		fmt.Printf("bin%d: %s\n", bi+1, b)
	}
	walls := make([][]time.Duration, len(contenders))
	cpus := make([][]time.Duration, len(contenders))
	rss := make([]int64, len(contenders))
	for r := 0; r < rounds; r++ {
		for i, c := range contenders {
			out := filepath.Join(work, "out")
			_ = os.RemoveAll(out)
			argv := append([]string{c.bin, "build", "--pool", poolFile, "-o", filepath.Join(out, "tasks.parquet"),
				"--run-dir", filepath.Join(out, "run"), "--log-level", "warn", "--no-progress"}, c.args...)
			d, cpu, m, err := timed(argv...)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			walls[i] = append(walls[i], d)
			cpus[i] = append(cpus[i], cpu)
			rss[i] = max(rss[i], m)
			fmt.Printf("round %d %-25s %6.2f s wall %6.2f s CPU  %4d MB\n", r+1, c.name, d.Seconds(), cpu.Seconds(), m>>20)
		}
	}
	// CPU time is reported beside wall time: on a shared machine it is
	// the steadier of the two. Each binary is compared with its own static
	// pass.
	for i, c := range contenders {
		s0 := i - i%len(stages)
		m0, c0 := median(walls[s0]), median(cpus[s0])
		m, cpu := median(walls[i]), median(cpus[i])
		fmt.Printf("%-25s median %6.2f s wall (×%.2f of static), %6.2f s CPU (×%.2f)  peak RSS %d MB\n",
			c.name, m.Seconds(), m.Seconds()/m0.Seconds(), cpu.Seconds(), cpu.Seconds()/c0.Seconds(), rss[i]>>20)
	}
	return nil
}

type stats struct{ meanGz, meanRaw, p50, p99, max float64 }

// pad writes n tasks built from the base pool's rows (cycled, renamed),
// each with filler files and words of its own, and a benchmark pool of
// 500 other padded tasks.
func pad(base, out, benchOut string, n int) (stats, error) {
	src, err := pool.Open(base)
	if err != nil {
		return stats{}, err
	}
	var rows [][]bundle.Entry
	err = src.Each(context.Background(), nil, func(rec pool.Record) error {
		var es []bundle.Entry
		err := bundle.Walk(bytes.NewReader(rec.Blob), bundle.DefaultLimits(), func(m bundle.Member, r io.Reader) error {
			data, err := io.ReadAll(r)
			if m.Kind == bundle.KindFile {
				es = append(es, bundle.Entry{Name: m.Name, Kind: m.Kind, Mode: m.Mode, Data: data})
			}
			return err
		})
		rows = append(rows, es)
		return err
	})
	if err != nil {
		return stats{}, err
	}
	r := rand.New(rand.NewPCG(7, 7))
	vocab := make([]string, 5000)
	for i := range vocab {
		var b strings.Builder
		for k := 0; k < 3+r.IntN(7); k++ {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		vocab[i] = b.String()
	}
	words := func(k int) string {
		var b strings.Builder
		for i := 0; i < k; i++ {
			if i > 0 && i%12 == 0 {
				b.WriteByte('\n')
			} else if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(vocab[r.IntN(len(vocab))])
		}
		return b.String()
	}
	// Environment filler: lines drawn from 256 source-like lines, so it
	// compresses about as well as real vendored sources (real pools: about
	// 6 KB compressed for 36 KB inflated).
	shapes := []string{"    %s = %s(%s, %d)\n", "def %s(%s, %s):\n", "    return %s.%s(%d)\n", "# %s %s %s\n", "    if %s > %d:\n        %s += 1\n"}
	var lines []string
	for len(lines) < 256 {
		s := shapes[r.IntN(len(shapes))]
		args := []any{}
		for _, c := range strings.Split(s, "%")[1:] {
			if c[0] == 'd' {
				args = append(args, r.IntN(1000))
			} else {
				args = append(args, vocab[r.IntN(len(vocab))])
			}
		}
		lines = append(lines, fmt.Sprintf(s, args...))
	}
	filler := func(size int) []byte {
		var b bytes.Buffer
		for b.Len() < size {
			b.WriteString(lines[r.IntN(len(lines))])
		}
		return b.Bytes()[:size]
	}
	var st stats
	var raws []float64
	write := func(file string, count int, prefix string) error {
		w, err := pool.Create(file, pool.WriterOptions{})
		if err != nil {
			return err
		}
		for i := 0; i < count; i++ {
			es := append([]bundle.Entry(nil), rows[r.IntN(len(rows))]...)
			raw := 0
			for k := range es {
				switch {
				case es[k].Name == "instruction.md" && prefix == "bench":
					// The benchmark shares no task with the pool.
					es[k].Data = []byte(words(300))
				case es[k].Name == "instruction.md":
					es[k].Data = append(append(bytes.Clone(es[k].Data), '\n'), words(150)...)
				case strings.HasPrefix(es[k].Name, "tests/test_") && strings.HasSuffix(es[k].Name, ".py"):
					es[k].Data = append(append(bytes.Clone(es[k].Data), "\n# "...), strings.ReplaceAll(words(300), "\n", "\n# ")...)
				}
				raw += len(es[k].Data)
			}
			size := int(math.Min(2<<20, 20<<10*math.Exp(r.NormFloat64())))
			es = append(es, bundle.Entry{Name: "environment/src/vendor.py", Kind: bundle.KindFile, Mode: 0o644, Data: filler(size)})
			raw += size
			var buf bytes.Buffer
			if err := bundle.Encode(&buf, es); err != nil {
				return err
			}
			if prefix == "task" {
				st.meanGz += float64(buf.Len()) / float64(count)
				st.meanRaw += float64(raw) / float64(count)
				raws = append(raws, float64(raw))
			}
			if err := w.Write(fmt.Sprintf("%s-%06d", prefix, i), buf.Bytes()); err != nil {
				w.Abort()
				return err
			}
		}
		return w.Close()
	}
	if err := write(out, n, "task"); err != nil {
		return st, err
	}
	r = rand.New(rand.NewPCG(8, 8)) // the benchmark's words are not the pool's
	if err := write(benchOut, 500, "bench"); err != nil {
		return st, err
	}
	sort.Float64s(raws)
	st.p50, st.p99, st.max = raws[len(raws)/2], raws[len(raws)*99/100], raws[len(raws)-1]
	return st, nil
}

func sh(argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	return cmd.Run()
}

// timed runs a command and returns its wall time, CPU time (user and
// system) and peak RSS.
func timed(argv ...string) (time.Duration, time.Duration, int64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, 0, fmt.Errorf("%v: %s", err, errb.String())
	}
	d := time.Since(t0)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return d, cpu, ru.Maxrss * 1024, nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
