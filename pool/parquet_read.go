package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
)

// Column names of the reference dataset.
const (
	ColPath       = "path"
	ColTaskBinary = "task_binary"
	// ColSolutionBinary is an optional column some re-releases of
	// solution-less pools carry: a gzip tar of the task's solution (a
	// solution/ directory, or solve.sh and its files at the top). It is
	// read into Record.Solution; the output never carries it.
	ColSolutionBinary = "solution_binary"
)

type parquetShard struct {
	name string
	rows int64
}

// ParquetSource reads one or more parquet files in order.
type ParquetSource struct {
	shards []parquetShard
	total  int64
}

// OpenParquet checks every file's footer and schema up front, so a wrong
// file fails the run before any work, with the file named.
func OpenParquet(files ...string) (*ParquetSource, error) {
	s := &ParquetSource{}
	for _, name := range files {
		f, pf, err := openParquetFile(name)
		if err != nil {
			return nil, err
		}
		rows := pf.NumRows()
		f.Close()
		s.shards = append(s.shards, parquetShard{name: name, rows: rows})
		s.total += rows
	}
	return s, nil
}

func openParquetFile(name string) (*os.File, *parquet.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(256<<10))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a readable parquet file: %w", name, err)
	}
	for _, col := range []string{ColPath, ColTaskBinary, ColSolutionBinary} {
		leaf, ok := pf.Schema().Lookup(col)
		if !ok && col == ColSolutionBinary {
			continue // optional
		}
		if !ok {
			f.Close()
			return nil, nil, fmt.Errorf("%s: no %q column (columns: %v); a task pool needs %q and %q",
				name, col, columnNames(pf), ColPath, ColTaskBinary)
		}
		if leaf.Node.Type().Kind() != parquet.ByteArray || leaf.MaxRepetitionLevel != 0 {
			f.Close()
			return nil, nil, fmt.Errorf("%s: column %q must be a flat string/binary column, not %v", name, col, leaf.Node.Type())
		}
	}
	return f, pf, nil
}

func columnNames(pf *parquet.File) []string {
	var names []string
	for _, p := range pf.Schema().Columns() {
		names = append(names, fmt.Sprint(p))
	}
	return names
}

// Len implements Source.
func (s *ParquetSource) Len() int64 { return s.total }

func (s *ParquetSource) String() string {
	if len(s.shards) == 1 {
		return s.shards[0].name
	}
	return fmt.Sprintf("%s (+%d more shards)", s.shards[0].name, len(s.shards)-1)
}

// Each implements Source, streaming one page at a time from the two
// columns it needs (three with the optional solution_binary).
func (s *ParquetSource) Each(ctx context.Context, skip func(int64) bool, fn func(Record) error) error {
	return s.each(ctx, skip, fn, false)
}

// EachBorrowed implements Lender: the blob is the reader's page memory,
// valid until fn returns.
func (s *ParquetSource) EachBorrowed(ctx context.Context, skip func(int64) bool, fn func(Record) error) error {
	return s.each(ctx, skip, fn, true)
}

func (s *ParquetSource) each(ctx context.Context, skip func(int64) bool, fn func(Record) error, borrow bool) error {
	var base int64
	for _, sh := range s.shards {
		if err := s.eachInShard(ctx, sh, base, skip, fn, borrow); err != nil {
			return err
		}
		base += sh.rows
	}
	return nil
}

func (s *ParquetSource) eachInShard(ctx context.Context, sh parquetShard, base int64, skip func(int64) bool, fn func(Record) error, borrow bool) error {
	f, pf, err := openParquetFile(sh.name)
	if err != nil {
		return err
	}
	defer f.Close()
	pathLeaf, _ := pf.Schema().Lookup(ColPath)
	blobLeaf, _ := pf.Schema().Lookup(ColTaskBinary)
	solLeaf, hasSol := pf.Schema().Lookup(ColSolutionBinary)
	idx := base
	for gi, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		paths := newColumnStream(chunks[pathLeaf.ColumnIndex].Pages())
		blobs := newColumnStream(chunks[blobLeaf.ColumnIndex].Pages())
		var sols *columnStream
		if hasSol {
			sols = newColumnStream(chunks[solLeaf.ColumnIndex].Pages())
		}
		closeAll := func() {
			paths.close()
			blobs.close()
			if sols != nil {
				sols.close()
			}
		}
		n := rg.NumRows()
		for i := int64(0); i < n; i++ {
			if err := ctx.Err(); err != nil {
				closeAll()
				return err
			}
			rec := Record{Index: idx, originFile: sh.name, originRow: idx - base}
			pv, err := paths.next()
			if err != nil {
				return fmt.Errorf("%s: row group %d: reading %q: %w", sh.name, gi, ColPath, err)
			}
			rec.PathNull = pv.IsNull()
			if !rec.PathNull {
				rec.Path = string(pv.ByteArray())
			}
			wanted := skip == nil || !skip(idx)
			bv, err := blobs.next()
			if err != nil {
				return fmt.Errorf("%s: row group %d: reading %q: %w", sh.name, gi, ColTaskBinary, err)
			}
			if sols != nil {
				sv, err := sols.next()
				if err != nil {
					return fmt.Errorf("%s: row group %d: reading %q: %w", sh.name, gi, ColSolutionBinary, err)
				}
				if wanted && !sv.IsNull() {
					rec.Solution = bytes.Clone(sv.ByteArray())
				}
			}
			if wanted {
				rec.BlobNull = bv.IsNull()
				if !rec.BlobNull {
					if rec.Blob = bv.ByteArray(); !borrow {
						rec.Blob = bytes.Clone(rec.Blob)
					}
				}
				if err := fn(rec); err != nil {
					closeAll()
					return err
				}
			}
			idx++
		}
		closeAll()
	}
	return nil
}

// columnStream yields the values of one flat column chunk, one page in
// memory at a time.
type columnStream struct {
	pages parquet.Pages
	page  parquet.Page
	vals  parquet.ValueReader
	buf   [1]parquet.Value
}

func newColumnStream(p parquet.Pages) *columnStream { return &columnStream{pages: p} }

// next returns the next value; its bytes are valid until the following call.
func (c *columnStream) next() (parquet.Value, error) {
	for {
		if c.vals != nil {
			n, err := c.vals.ReadValues(c.buf[:])
			if n == 1 {
				return c.buf[0], nil
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return parquet.Value{}, err
			}
			parquet.Release(c.page)
			c.page, c.vals = nil, nil
		}
		p, err := c.pages.ReadPage()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return parquet.Value{}, io.ErrUnexpectedEOF
			}
			return parquet.Value{}, err
		}
		c.page, c.vals = p, p.Values()
	}
}

func (c *columnStream) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	c.pages.Close()
}

// Files lists the parquet files of the source, in order.
func (s *ParquetSource) Files() []string {
	out := make([]string, len(s.shards))
	for i, sh := range s.shards {
		out[i] = sh.name
	}
	return out
}
