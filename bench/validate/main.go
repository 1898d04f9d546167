// Command validate benchmarks otcurate's validate+dedup pass against the
// physical limit (single-process `gzip -dc` of the same blobs) and a plain
// Python tarfile extractor, side by side in one run, on a 5,000-task pool
// and again on a 20,000-task one (where the process's fixed costs weigh
// less), and measures peak RSS of the static stages (validate, dedup,
// lint) on the large pool and on a pool of 10 MB blobs. It drives a built
// otcurate binary (-bin, default bin/otcurate: make build first) and needs
// no sandbox. It prints ratios and medians; it asserts nothing (targets
// live in the README and the issue).
//
// With -realistic it instead pads the generated tasks to real pools' sizes
// (bench/internal/realsize: about 6 KB compressed, 36 KB inflated per
// task, log-normal with a tail to a few hundred KB) and times, side by
// side, `gzip -dc` of the blobs, `otcurate validate` and `otcurate build
// --stages validate,dedup`, wall and CPU time (CPU is the steadier of the
// two on a shared machine); scripts/bench-realistic.sh runs it.
//
//	go run ./bench/validate [-n 5000] [-big 20000] [-rounds 5] [-no-python] [-bin bin/otcurate]
//	go run ./bench/validate -realistic [-n 3566] [-rounds 5]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
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
	n := flag.Int("n", 5000, "tasks in the throughput pool")
	big := flag.Int("big", 20000, "tasks in the large pool (throughput and peak RSS; 0 skips)")
	bigBlobs := flag.Int("big-blobs", 40, "tasks in the 10 MB-blob pool")
	rounds := flag.Int("rounds", 5, "timed rounds per contender (median reported)")
	bin := flag.String("bin", "bin/otcurate", "otcurate binary")
	keep := flag.Bool("keep", false, "keep the work directory")
	noPython := flag.Bool("no-python", false, "skip the (slow) Python contender")
	realistic := flag.Bool("realistic", false, "pad the pool to real pools' sizes and time gzip -dc, validate and build --stages validate,dedup (wall and CPU)")
	cpuProfile := flag.String("cpuprofile", "", "with -realistic: after the rounds, one more build writing its CPU profile here")
	sources := flag.Float64("sources", 0, "with -realistic: median count of padding source files per task (0: realsize's default, 4)")
	flag.Parse()
	if *realistic {
		if err := runRealistic(*bin, *n, *rounds, *keep, *cpuProfile, *sources); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*bin, *n, *big, *bigBlobs, *rounds, *keep, !*noPython); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin string, n, big, bigBlobs, rounds int, keep, python bool) error {
	work, err := os.MkdirTemp("", "otcurate-bench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(work)
	}
	bin, _ = filepath.Abs(bin)
	poolFile := filepath.Join(work, "pool.parquet")
	fmt.Printf("generating a %d-task pool (gen-pool, no defects)...\n", n)
	if err := sh(bin, "gen-pool", "-n", fmt.Sprint(n), "--seed", "7", "--rates", "none", "-o", poolFile, "--log-level", "warn"); err != nil {
		return err
	}
	if err := throughput(bin, work, "small", poolFile, rounds, python); err != nil {
		return err
	}

	if big == 0 {
		return nil
	}
	bigFile := filepath.Join(work, "big.parquet")
	fmt.Printf("generating a %d-task pool...\n", big)
	if err := sh(bin, "gen-pool", "-n", fmt.Sprint(big), "--seed", "8", "--rates", "none", "-o", bigFile, "--log-level", "warn"); err != nil {
		return err
	}
	// The same throughput on the large pool: the process's fixed costs
	// (start-up, run files) weigh less, as in a real run.
	if err := throughput(bin, work, "big", bigFile, rounds, false); err != nil {
		return err
	}
	// Peak RSS on the large pool, with the static stages named: the
	// default list adds the sandbox stages whenever an engine answers.
	_, rss, err := timed(bin, "build", "--pool", bigFile, "-o", filepath.Join(work, "big-out.parquet"), "--stages", staticStages,
		"--run-dir", filepath.Join(work, "big-run"), "--log-level", "warn", "--no-progress")
	if err != nil {
		return err
	}
	fmt.Printf("peak RSS, build of %d tasks:        %6.1f MB (target ≤ 200 MB)\n", big, float64(rss)/1e6)

	// Peak RSS with 10 MB blobs.
	blobFile := filepath.Join(work, "bigblobs.parquet")
	if err := writeBigBlobPool(blobFile, bigBlobs, 10<<20); err != nil {
		return err
	}
	_, rss, err = timed(bin, "build", "--pool", blobFile, "-o", filepath.Join(work, "bigblobs-out.parquet"), "--stages", staticStages,
		"--run-dir", filepath.Join(work, "bigblobs-run"), "--log-level", "warn", "--no-progress")
	if err != nil {
		return err
	}
	fmt.Printf("peak RSS, build of %d × 10 MB blobs:  %6.1f MB (target ≤ 200 MB)\n", bigBlobs, float64(rss)/1e6)
	return nil
}

// throughput times validate+dedup on poolFile against gzip -dc (and the
// Python extractor) of the same blobs, interleaved, and prints medians and
// ratios.
func throughput(bin, work, name, poolFile string, rounds int, python bool) error {
	gzFile, framed := filepath.Join(work, name+"-blobs.gz"), filepath.Join(work, name+"-blobs.framed")
	count, compressed, err := exportBlobs(poolFile, gzFile, framed)
	if err != nil {
		return err
	}
	fmt.Printf("pool: %d tasks, %.1f MB of task_binary (mean %.1f KB)\n\n", count, float64(compressed)/1e6, float64(compressed)/float64(count)/1e3)

	pyScript := filepath.Join(work, "extract.py")
	if err := os.WriteFile(pyScript, []byte(pythonExtractor), 0o644); err != nil {
		return err
	}
	contenders := []struct {
		name string
		argv []string
	}{
		{"gzip -dc (1 process)", []string{"sh", "-c", "gzip -dc " + gzFile + " > /dev/null"}},
		{"otcurate validate+dedup", []string{bin, "build", "--pool", poolFile, "-o", filepath.Join(work, name+"-out.parquet"),
			"--run-dir", filepath.Join(work, name+"-run"), "--stages", "validate,dedup", "--log-level", "warn", "--no-progress"}},
		{"python tarfile extract", []string{"python3", pyScript, framed, filepath.Join(work, "py")}},
	}
	if !python {
		contenders = contenders[:2]
	}
	times := make([][]float64, len(contenders))
	for r := 0; r < rounds; r++ {
		for i, c := range contenders { // interleaved, so drift hits all alike
			// Untimed: flush what the previous contender wrote (the Python
			// extractor writes thousands of files), so its writeback does
			// not land in the next contender's time, e.g. in an fsync.
			syscall.Sync()
			d, _, err := timed(c.argv...)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			times[i] = append(times[i], d.Seconds())
		}
	}
	fmt.Printf("%-26s %10s %12s %12s\n", "contender", "median s", "tasks/s", "MB/s (gz)")
	med := make([]float64, len(contenders))
	for i, c := range contenders {
		med[i] = median(times[i])
		fmt.Printf("%-26s %10.3f %12.0f %12.1f\n", c.name, med[i], float64(count)/med[i], float64(compressed)/1e6/med[i])
	}
	fmt.Printf("\nratio otcurate / gzip -dc rate, %d tasks:  %.2fx  (target ≥ 1.5x)\n", count, med[0]/med[1])
	if python {
		fmt.Printf("ratio otcurate / python tarfile, %d tasks: %.1fx  (target ≥ 10x)\n", count, med[2]/med[1])
	}
	fmt.Println()
	return nil
}

// staticStages are the stages the RSS runs use: every stage that needs no
// sandbox.
const staticStages = "validate,dedup,lint"

func sh(argv ...string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// timed runs a command and returns its wall time and peak RSS in bytes.
//
// The RSS comes from GNU time when it is installed: the rusage of a child
// started from this process would include this process's own high-water
// mark (the child is created with vfork and shares our memory until it
// execs), which after writing the 10 MB-blob pool is hundreds of MB.
func timed(argv ...string) (time.Duration, int64, error) {
	gnuTime := "/usr/bin/time"
	useTime := fileExists(gnuTime)
	if useTime {
		argv = append([]string{gnuTime, "-f", "maxrss_kb=%M"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, 0, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, stderr.String())
	}
	if useTime {
		out := stderr.String()
		if i := strings.LastIndex(out, "maxrss_kb="); i >= 0 {
			var kb int64
			fmt.Sscanf(out[i:], "maxrss_kb=%d", &kb)
			return d, kb * 1024, nil
		}
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return d, ru.Maxrss * 1024, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// exportBlobs writes the pool's blobs as concatenated gzip members (which
// `gzip -dc` reads as one stream) and as length-framed records for Python.
func exportBlobs(poolFile, gzFile, framed string) (int, int64, error) {
	src, err := pool.Open(poolFile)
	if err != nil {
		return 0, 0, err
	}
	g, err := os.Create(gzFile)
	if err != nil {
		return 0, 0, err
	}
	defer g.Close()
	f, err := os.Create(framed)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var n int
	var total int64
	err = src.Each(context.Background(), nil, func(r pool.Record) error {
		n++
		total += int64(len(r.Blob))
		if _, err := g.Write(r.Blob); err != nil {
			return err
		}
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(r.Blob)))
		if _, err := f.Write(hdr[:]); err != nil {
			return err
		}
		_, err := f.Write(r.Blob)
		return err
	})
	return n, total, err
}

func writeBigBlobPool(name string, n int, size int) error {
	w, err := pool.Create(name, pool.WriterOptions{})
	if err != nil {
		return err
	}
	payload := make([]byte, size)
	for i := 0; i < n; i++ {
		rand.Read(payload)
		var buf bytes.Buffer
		err := bundle.Encode(&buf, []bundle.Entry{
			{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(fmt.Sprintf("Task %d: process /app/data.bin\n", i))},
			{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("schema_version = \"1.1\"\n")},
			{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian:bookworm\nCOPY data.bin /app/\n")},
			{Name: "environment/data.bin", Kind: bundle.KindFile, Mode: 0o644, Data: payload},
			{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("echo 1 > /logs/verifier/reward.txt\n")},
		})
		if err != nil {
			return err
		}
		if err := w.Write(fmt.Sprintf("bigblob-%03d", i), buf.Bytes()); err != nil {
			return err
		}
	}
	return w.Close()
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// pythonExtractor is the reference-style extractor: tarfile over each
// blob, extracting to disk like the OT-Agent converter does.
const pythonExtractor = `import io, os, shutil, struct, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
i = 0
with open(src, "rb") as f:
    while True:
        hdr = f.read(4)
        if not hdr:
            break
        (n,) = struct.unpack(">I", hdr)
        blob = f.read(n)
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tf:
            tf.extractall(os.path.join(out, str(i)))
        i += 1
shutil.rmtree(out)
`
