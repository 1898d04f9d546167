package poolgen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pool"
)

// Output says where WritePool puts a generated pool.
type Output struct {
	Parquet string // dataset file (every defect kind representable)
	Dir     string // folder of task directories (codec-level defects are skipped: a directory cannot hold them)
	Labels  string // labels.jsonl; default next to the output
	// Base is an existing parquet pool (with its BASE.labels.jsonl) whose
	// rows and labels are copied first, unchanged, before the generated
	// tasks: how the bundled sample pool gained tasks of a new family
	// while keeping its old rows byte for byte. Parquet output only; a
	// generated path that is already in Base is an error.
	Base string
	// Solutions, when set, receives the hidden reference solution of every
	// generated solution-less task that has one (Task.Solution), as
	// SOLUTIONS/<task path>/solution/: the layout `otcurate build
	// --solutions` reads. Never part of the pool itself.
	Solutions string
}

// WriteStats counts what WritePool wrote.
type WriteStats struct {
	Tasks   int
	Skipped int // blob-level defects that a task directory cannot represent
	Labels  string
}

// WritePool generates a pool and writes it with its labels.
func WritePool(ctx context.Context, opts Options, out Output) (*WriteStats, error) {
	if (out.Parquet == "") == (out.Dir == "") {
		return nil, fmt.Errorf("give exactly one of a parquet file or a directory")
	}
	if out.Labels == "" {
		if out.Parquet != "" {
			out.Labels = trimExt(out.Parquet) + ".labels.jsonl"
		} else {
			out.Labels = filepath.Clean(out.Dir) + ".labels.jsonl"
		}
	}
	st := &WriteStats{Labels: out.Labels}
	var labels []Label
	var w *pool.Writer
	if out.Parquet != "" {
		var err error
		if w, err = pool.Create(out.Parquet, pool.WriterOptions{}); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	if out.Base != "" {
		if w == nil {
			return nil, fmt.Errorf("--base needs a parquet output")
		}
		base, err := copyBase(ctx, out.Base, w, seen)
		if err != nil {
			w.Abort()
			return nil, err
		}
		labels = base
		st.Tasks += len(base)
	}
	var buf bytes.Buffer
	err := Generate(ctx, opts, func(t Task) error {
		if seen[t.Path] {
			return fmt.Errorf("%s: the path is already in %s (use another --prefix)", t.Path, out.Base)
		}
		if out.Solutions != "" && len(t.Solution) > 0 {
			if err := writeDir(filepath.Join(out.Solutions, filepath.FromSlash(t.Path)), t.Solution); err != nil {
				return err
			}
		}
		if w != nil {
			blob := t.Blob
			if t.Entries != nil {
				buf.Reset()
				if err := bundle.Encode(&buf, t.Entries); err != nil {
					return fmt.Errorf("%s: %w", t.Path, err)
				}
				blob = buf.Bytes()
			} else if blob == nil {
				blob = []byte{}
			}
			if err := w.WriteUnchecked(t.Path, blob); err != nil {
				return err
			}
		} else {
			if t.Entries == nil {
				st.Skipped++
				return nil
			}
			if err := writeDir(filepath.Join(out.Dir, filepath.FromSlash(t.Path)), t.Entries); err != nil {
				return err
			}
		}
		st.Tasks++
		labels = append(labels, t.Label)
		return nil
	})
	if err != nil {
		if w != nil {
			w.Abort()
		}
		return nil, err
	}
	if w != nil {
		if err := w.Close(); err != nil {
			return nil, err
		}
	}
	f, err := os.Create(out.Labels)
	if err != nil {
		return nil, err
	}
	if err := WriteLabels(f, labels); err != nil {
		f.Close()
		return nil, err
	}
	return st, f.Close()
}

// copyBase writes every row of the parquet pool base to w and returns its
// labels (base's .labels.jsonl, one per row, in row order).
func copyBase(ctx context.Context, base string, w *pool.Writer, seen map[string]bool) ([]Label, error) {
	f, err := os.Open(trimExt(base) + ".labels.jsonl")
	if err != nil {
		return nil, fmt.Errorf("base pool labels: %w", err)
	}
	labels, err := ReadLabels(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("base pool labels: %w", err)
	}
	src, err := pool.OpenParquet(base)
	if err != nil {
		return nil, fmt.Errorf("base pool: %w", err)
	}
	rows := 0
	err = src.Each(ctx, nil, func(r pool.Record) error {
		if rows >= len(labels) || labels[rows].Path != r.Path {
			return fmt.Errorf("base pool: row %d (%s) has no label in the same place", rows, r.Path)
		}
		rows++
		seen[r.Path] = true
		return w.WriteUnchecked(r.Path, r.Blob)
	})
	if err != nil {
		return nil, err
	}
	if rows != len(labels) {
		return nil, fmt.Errorf("base pool: %d rows but %d labels", rows, len(labels))
	}
	return labels, nil
}

func trimExt(p string) string { return p[:len(p)-len(filepath.Ext(p))] }

func writeDir(dir string, entries []bundle.Entry) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		target := filepath.Join(dir, filepath.FromSlash(e.Name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		switch e.Kind {
		case bundle.KindDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case bundle.KindFile:
			if err := os.WriteFile(target, e.Data, e.Mode.Perm()); err != nil {
				return err
			}
			if err := os.Chmod(target, e.Mode.Perm()); err != nil {
				return err
			}
		case bundle.KindSymlink:
			if err := os.Symlink(e.Linkname, target); err != nil {
				return err
			}
		}
	}
	return nil
}
