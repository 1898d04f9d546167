package pool

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Row is one dataset row in the reference schema. Both columns are
// optional (nullable) like the pyarrow-written reference files; the writer
// never writes a null.
type Row struct {
	Path       string `parquet:"path,optional"`
	TaskBinary []byte `parquet:"task_binary,optional,plain,uncompressed"`
}

// WriterOptions tune the parquet layout. The zero value gives the HF-safe
// defaults.
type WriterOptions struct {
	RowsPerGroup  int64 // default 100 (HF's row-group size for binary datasets)
	BytesPerGroup int64 // flush a row group once this many blob bytes are buffered; default 16 MiB
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.RowsPerGroup <= 0 {
		o.RowsPerGroup = 100
	}
	if o.BytesPerGroup <= 0 {
		o.BytesPerGroup = 16 << 20
	}
	return o
}

// hfFeatures pins the HF `datasets` feature types of the two columns.
const hfFeatures = `{"info":{"features":{"path":{"dtype":"string","_type":"Value"},"task_binary":{"dtype":"binary","_type":"Value"}}}}`

// Writer writes one parquet file atomically: rows go to NAME.tmp, and Close
// syncs and renames it. Settings (chosen for the HF datasets readers): ≤ 100
// rows and ≤ ~96 MiB of blobs per row group, one row per Write so pages
// stay small, no statistics or bounds on the blob column (readers cap page
// headers at 16 MiB), PLAIN uncompressed blobs, zstd for the rest.
type Writer struct {
	name     string
	tmp      string
	f        *os.File
	bw       *bufio.Writer
	pw       *parquet.GenericWriter[Row]
	opts     WriterOptions
	buffered int64
	rows     int64
	bytes    int64
	row      [1]Row
}

// Create starts a dataset file.
func Create(name string, opts WriterOptions) (*Writer, error) {
	opts = opts.withDefaults()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, err
	}
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(&writebackFile{f: f}, 1<<20)
	pw := parquet.NewGenericWriter[Row](bw,
		parquet.CreatedBy("otcurate", "0.1.0", "dev"),
		parquet.MaxRowsPerRowGroup(opts.RowsPerGroup),
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.SkipPageBounds(ColTaskBinary),
		parquet.SkipPageStatistics(ColTaskBinary),
		parquet.PageBufferSize(1<<20),
		parquet.KeyValueMetadata("huggingface", hfFeatures),
	)
	return &Writer{name: name, tmp: tmp, f: f, bw: bw, pw: pw, opts: opts}, nil
}

// Write appends one row. The blob is not retained after the call returns
// only once its row group is flushed; callers must not modify it.
func (w *Writer) Write(path string, blob []byte) error {
	if path == "" || len(blob) == 0 {
		return fmt.Errorf("refusing to write an empty path or blob (%q)", path)
	}
	return w.WriteUnchecked(path, blob)
}

// WriteUnchecked appends a row without the non-empty checks, for tools that
// write deliberately broken pools (an empty path is written as null, a nil
// blob as null, an empty non-nil blob as an empty value).
func (w *Writer) WriteUnchecked(path string, blob []byte) error {
	w.row[0] = Row{Path: path, TaskBinary: blob}
	if _, err := w.pw.Write(w.row[:]); err != nil {
		return fmt.Errorf("writing %s: %w", w.name, err)
	}
	w.row[0] = Row{}
	w.rows++
	w.bytes += int64(len(blob))
	w.buffered += int64(len(blob))
	if w.buffered >= w.opts.BytesPerGroup {
		if err := w.pw.Flush(); err != nil {
			return fmt.Errorf("writing %s: %w", w.name, err)
		}
		w.buffered = 0
	}
	return nil
}

// Rows is the number of rows written so far.
func (w *Writer) Rows() int64 { return w.rows }

// Close finishes the file: footer, flush, fsync, rename into place.
func (w *Writer) Close() error {
	if err := w.pw.Close(); err != nil {
		w.Abort()
		return fmt.Errorf("closing %s: %w", w.name, err)
	}
	if err := w.bw.Flush(); err != nil {
		w.Abort()
		return err
	}
	if err := w.f.Sync(); err != nil {
		w.Abort()
		return err
	}
	if err := w.f.Close(); err != nil {
		os.Remove(w.tmp)
		return err
	}
	return os.Rename(w.tmp, w.name)
}

// Abort discards the partial file.
func (w *Writer) Abort() {
	w.f.Close()
	os.Remove(w.tmp)
}

// ShardName is the HF layout name of shard i of n.
func ShardName(dir string, i, n int) string {
	return filepath.Join(dir, fmt.Sprintf("train-%05d-of-%05d.parquet", i, n))
}

// ShardedWriter spreads a known number of rows over n HF-style shards of
// nearly equal row counts. It writes one shard at a time.
type ShardedWriter struct {
	dir      string
	n        int
	perShard int64
	opts     WriterOptions
	cur      *Writer
	idx      int
	written  []string
}

// CreateSharded prepares n shards for total rows under dir.
func CreateSharded(dir string, n int, total int64, opts WriterOptions) (*ShardedWriter, error) {
	if n < 1 {
		return nil, fmt.Errorf("shard count must be at least 1")
	}
	if total < int64(n) && total > 0 {
		n = int(total)
	}
	per := (total + int64(n) - 1) / int64(n)
	if per == 0 {
		per = 1
	}
	return &ShardedWriter{dir: dir, n: n, perShard: per, opts: opts}, nil
}

// Write appends a row to the current shard, opening the next one as needed.
func (s *ShardedWriter) Write(path string, blob []byte) error {
	if s.cur != nil && s.cur.Rows() >= s.perShard {
		if err := s.closeCurrent(); err != nil {
			return err
		}
	}
	if s.cur == nil {
		w, err := Create(ShardName(s.dir, s.idx, s.n), s.opts)
		if err != nil {
			return err
		}
		s.cur = w
	}
	return s.cur.Write(path, blob)
}

func (s *ShardedWriter) closeCurrent() error {
	err := s.cur.Close()
	s.written = append(s.written, s.cur.name)
	s.cur = nil
	s.idx++
	return err
}

// Close finishes the last shard and returns the files written.
func (s *ShardedWriter) Close() ([]string, error) {
	if s.cur != nil {
		if err := s.closeCurrent(); err != nil {
			return s.written, err
		}
	}
	return s.written, nil
}

// Abort discards the shard in progress.
func (s *ShardedWriter) Abort() {
	if s.cur != nil {
		s.cur.Abort()
	}
}
