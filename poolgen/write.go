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
	var buf bytes.Buffer
	err := Generate(ctx, opts, func(t Task) error {
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
