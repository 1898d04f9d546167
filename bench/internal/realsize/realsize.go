// Package realsize pads generated task pools to the sizes of real Harbor
// pools, for the benchmarks: gen-pool bundles are about 1.3 KB compressed,
// real pools about 6 KB compressed and 36 KB inflated per task on average,
// with a long tail (data files, small binaries, vendored sources), and a
// benchmark on the small ones makes every per-byte cost look smaller than
// it is.
//
// The distribution (see Padder.Files): each task gets environment files
// whose inflated total is log-normal with a 19 KB median and σ = 1.1
// (mean about 34 KB, so about 36 KB with the base task's own files),
// capped at 768 KB; about 1% of tasks carry 200–768 KB. Log-normal because
// file and bundle sizes are multiplicative (a project is a few files of a
// few functions of a few lines) and real pools' size histograms are
// roughly straight on a log axis with a right tail; σ = 1.1 puts the p99
// near 13× the median. The total is split into vendored source files (most
// of it: a log-normal count around 4 at the median size, growing with √size,
// up to 60, in a few nested folders; token-level text over a per-file
// Zipf vocabulary with 90% of statements repeating a recent one, which
// deflates about 8-10× like boilerplate-heavy real code), a data CSV in half
// of the tasks (10–30% of the total; numbers, about 2.3×) and a binary blob
// that does not compress in a fifth of them (log-normal around 1 KB,
// capped at 64 KB). On gen-pool's tasks the padded pool averages about
// 6.4 KB compressed and 36 KB inflated (gen-pool's own files add ~1.3 KB
// compressed: real pools deflate a little better, 6 KB for 36 KB); bench/validate -realistic prints the pool's figures.
package realsize

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
)

// Distribution parameters (see the package doc).
const (
	medianPad     = 19 << 10
	sigmaPad      = 1.1
	maxPad        = 768 << 10
	csvShare      = 0.5 // fraction of tasks with a data CSV
	binaryShare   = 0.2 // fraction of tasks with a binary blob
	medianSources = 4   // source files at the median size (√size-scaled)
	maxSources    = 60
	repeatShare   = 0.9 // of source statements copied from a recent one
	medianBin     = 1024
	maxBin        = 64 << 10
)

// Padder draws realistic filler files. It is not safe for concurrent use.
type Padder struct {
	// Sources is the median count of source files at the median size
	// (NewPadder sets the default, 4); more files weigh per-member costs.
	Sources float64
	r       *rand.Rand
	vocab   []string
	local   []string // one file's identifiers (files reuse their own names, as code does)
	zipf    *rand.Zipf
}

// NewPadder returns a Padder whose draws are fixed by seed.
func NewPadder(seed uint64) *Padder {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vocab := make([]string, 4000)
	for i := range vocab {
		var b strings.Builder
		for k := 0; k < 3+r.IntN(8); k++ {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		vocab[i] = b.String()
	}
	return &Padder{Sources: medianSources, r: r, vocab: vocab, zipf: rand.NewZipf(r, 1.2, 2, uint64(localWords-1))}
}

// Words returns k words from the padder's vocabulary, twelve to a line,
// for text that must differ between tasks (instructions, test files).
func (p *Padder) Words(k int) string {
	var b strings.Builder
	for i := 0; i < k; i++ {
		if i > 0 && i%12 == 0 {
			b.WriteByte('\n')
		} else if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.vocab[p.r.IntN(len(p.vocab))])
	}
	return b.String()
}

// localWords is how many identifiers one filler file uses.
const localWords = 120

// newFile draws the identifiers of the next filler file.
func (p *Padder) newFile() {
	p.local = p.local[:0]
	for i := 0; i < localWords; i++ {
		p.local = append(p.local, p.vocab[p.r.IntN(len(p.vocab))])
	}
}

func (p *Padder) word() string { return p.local[p.zipf.Uint64()] }

func lognormal(r *rand.Rand, median, sigma float64, limit int) int {
	return int(math.Min(float64(limit), median*math.Exp(sigma*r.NormFloat64())))
}

// source writes about size bytes of Python-like code.
func (p *Padder) source(size int) []byte {
	p.newFile()
	var b bytes.Buffer
	b.Grow(size + 128)
	indent := ""
	var starts []int // where each emitted statement began
	for b.Len() < size {
		// Code repeats itself (boilerplate, calls with the same
		// arguments): copy one of the recent statements at times.
		if n := len(starts); n > 8 && p.r.Float64() < repeatShare {
			i := n - 1 - p.r.IntN(min(n-1, 64))
			end := b.Len()
			if i+1 < n {
				end = starts[i+1]
			}
			starts = append(starts, b.Len())
			b.Write(slices.Clone(b.Bytes()[starts[i]:end]))
			continue
		}
		starts = append(starts, b.Len())
		switch p.r.IntN(8) {
		case 0:
			fmt.Fprintf(&b, "\ndef %s(%s, %s=%d):\n", p.word(), p.word(), p.word(), p.r.IntN(100))
			indent = "    "
		case 1:
			fmt.Fprintf(&b, "%sif %s.%s(%s) > %d:\n%s    %s += %s\n", indent, p.word(), p.word(), p.word(), p.r.IntN(1000), indent, p.word(), p.word())
		case 2:
			fmt.Fprintf(&b, "%sreturn %s(%s, %s)\n", indent, p.word(), p.word(), p.word())
		case 3:
			fmt.Fprintf(&b, "%s# %s %s %s %s\n", indent, p.word(), p.word(), p.word(), p.word())
		case 4:
			fmt.Fprintf(&b, "%sfor %s in %s.%s():\n%s    %s.append(%s[%d])\n", indent, p.word(), p.word(), p.word(), indent, p.word(), p.word(), p.r.IntN(64))
		default:
			fmt.Fprintf(&b, "%s%s = %s.%s(%s, %q)\n", indent, p.word(), p.word(), p.word(), p.word(), p.word())
		}
	}
	return b.Bytes()[:size]
}

// csv writes about size bytes of a numeric table.
func (p *Padder) csv(size int) []byte {
	p.newFile()
	var b bytes.Buffer
	b.Grow(size + 128)
	cols := 3 + p.r.IntN(6)
	for c := 0; c < cols; c++ {
		if c > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.word())
	}
	b.WriteByte('\n')
	cats := []string{p.word(), p.word(), p.word(), p.word()}
	for row := 0; b.Len() < size; row++ {
		b.WriteString(strconv.Itoa(row))
		for c := 1; c < cols; c++ {
			b.WriteByte(',')
			switch c % 3 {
			case 0:
				b.WriteString(cats[p.r.IntN(len(cats))])
			case 1:
				b.WriteString(strconv.FormatFloat(p.r.NormFloat64()*10, 'f', 2, 64))
			default:
				b.WriteString(strconv.Itoa(p.r.IntN(1000)))
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()[:size]
}

// Files draws one task's filler: vendored sources, maybe a data CSV and
// maybe a binary blob, under environment/ (see the package doc).
func (p *Padder) Files() []bundle.Entry {
	total := lognormal(p.r, medianPad, sigmaPad, maxPad)
	var es []bundle.Entry
	if p.r.Float64() < binaryShare {
		n := lognormal(p.r, medianBin, 1, maxBin)
		blob := make([]byte, n)
		for i := range blob {
			blob[i] = byte(p.r.Uint32())
		}
		es = append(es, bundle.Entry{Name: "environment/assets/model.bin", Kind: bundle.KindFile, Mode: 0o644, Data: blob})
		total -= min(total/2, n)
	}
	if p.r.Float64() < csvShare {
		n := total * (1 + p.r.IntN(3)) / 10
		es = append(es, bundle.Entry{Name: "environment/data/input.csv", Kind: bundle.KindFile, Mode: 0o644, Data: p.csv(n)})
		total -= n
	}
	// Sources come as a small project: a few files in a few folders,
	// more of them in the bigger tasks (per-member costs scale with them).
	files := max(1, min(maxSources, lognormal(p.r, p.Sources*math.Sqrt(float64(total)/medianPad), 0.6, maxSources)))
	dirs := []string{"environment/src"}
	for i := 0; i < files; i++ {
		n := total / (files - i)
		if i < files-1 {
			n = n / 2 * (1 + p.r.IntN(2))
		}
		total -= n
		if i > 0 && p.r.IntN(4) == 0 {
			dirs = append(dirs, dirs[p.r.IntN(len(dirs))]+"/"+p.vocab[p.r.IntN(len(p.vocab))])
		}
		name := fmt.Sprintf("%s/%s_%d.py", dirs[p.r.IntN(len(dirs))], p.vocab[p.r.IntN(len(p.vocab))], i)
		es = append(es, bundle.Entry{Name: name, Kind: bundle.KindFile, Mode: 0o644, Data: p.source(n)})
	}
	return es
}

// Options configure Pad.
type Options struct {
	// Seed fixes the draws.
	Seed uint64
	// Prefix names the written tasks (PREFIX-000001); "" means "task".
	Prefix string
	// Words extends each instruction.md and tests/test_*.py with words of
	// their own, so tasks built from one base row differ as real ones do
	// (for similarity benchmarks; 0 leaves them as generated).
	Words int
	// Sources overrides the padder's median source-file count (0 keeps
	// the default).
	Sources float64
}

// Stats describe a padded pool's sizes in bytes.
type Stats struct {
	Tasks                         int
	MeanGz, MeanRaw               float64
	P50Raw, P99Raw, MaxRaw, P99Gz float64
}

// String formats the stats for a benchmark's header.
func (s Stats) String() string {
	return fmt.Sprintf("%d tasks, mean %.1f KB compressed, %.1f KB inflated (inflated p50 %.1f, p99 %.1f, max %.0f KB; compressed p99 %.1f KB)",
		s.Tasks, s.MeanGz/1024, s.MeanRaw/1024, s.P50Raw/1024, s.P99Raw/1024, s.MaxRaw/1024, s.P99Gz/1024)
}

// Pad writes n tasks to the parquet out, each a row of the base pool
// (drawn at random, so rows repeat when n exceeds the base) with filler
// files of its own from a Padder.
func Pad(ctx context.Context, base, out string, n int, o Options) (Stats, error) {
	rows, err := readRows(ctx, base)
	if err != nil {
		return Stats{}, err
	}
	if len(rows) == 0 {
		return Stats{}, fmt.Errorf("pad: %s holds no readable task", base)
	}
	if o.Prefix == "" {
		o.Prefix = "task"
	}
	p := NewPadder(o.Seed)
	if o.Sources > 0 {
		p.Sources = o.Sources
	}
	w, err := pool.Create(out, pool.WriterOptions{})
	if err != nil {
		return Stats{}, err
	}
	var raws, gzs []float64
	for i := 0; i < n; i++ {
		es := append([]bundle.Entry(nil), rows[p.r.IntN(len(rows))]...)
		if o.Words > 0 {
			for k := range es {
				switch {
				case es[k].Name == "instruction.md":
					es[k].Data = append(append(bytes.Clone(es[k].Data), '\n'), p.Words(o.Words)...)
				case strings.HasPrefix(es[k].Name, "tests/test_") && strings.HasSuffix(es[k].Name, ".py"):
					es[k].Data = append(append(bytes.Clone(es[k].Data), "\n# "...), strings.ReplaceAll(p.Words(2*o.Words), "\n", "\n# ")...)
				}
			}
		}
		es = append(es, p.Files()...)
		raw := 0
		for _, e := range es {
			raw += len(e.Data)
		}
		var buf bytes.Buffer
		if err := bundle.Encode(&buf, es); err != nil {
			w.Abort()
			return Stats{}, err
		}
		raws, gzs = append(raws, float64(raw)), append(gzs, float64(buf.Len()))
		if err := w.Write(fmt.Sprintf("%s-%06d", o.Prefix, i), buf.Bytes()); err != nil {
			w.Abort()
			return Stats{}, fmt.Errorf("pad: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return Stats{}, fmt.Errorf("pad: %w", err)
	}
	return statsOf(raws, gzs), nil
}

func statsOf(raws, gzs []float64) Stats {
	st := Stats{Tasks: len(raws)}
	if len(raws) == 0 {
		return st
	}
	for i := range raws {
		st.MeanRaw += raws[i] / float64(len(raws))
		st.MeanGz += gzs[i] / float64(len(gzs))
	}
	sort.Float64s(raws)
	sort.Float64s(gzs)
	st.P50Raw, st.P99Raw, st.MaxRaw = raws[len(raws)/2], raws[len(raws)*99/100], raws[len(raws)-1]
	st.P99Gz = gzs[len(gzs)*99/100]
	return st
}

// readRows decodes the base pool's regular files, row by row.
func readRows(ctx context.Context, base string) ([][]bundle.Entry, error) {
	src, err := pool.Open(base)
	if err != nil {
		return nil, fmt.Errorf("pad: %w", err)
	}
	var rows [][]bundle.Entry
	err = src.Each(ctx, nil, func(rec pool.Record) error {
		var es []bundle.Entry
		err := bundle.Walk(bytes.NewReader(rec.Blob), bundle.DefaultLimits(), func(m bundle.Member, r io.Reader) error {
			data, err := io.ReadAll(r)
			if m.Kind == bundle.KindFile {
				es = append(es, bundle.Entry{Name: m.Name, Kind: m.Kind, Mode: m.Mode, Data: data})
			}
			return err
		})
		if err != nil {
			return nil // a defective base row is skipped, not padded
		}
		rows = append(rows, es)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pad: read %s: %w", base, err)
	}
	return rows, nil
}
