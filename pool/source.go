package pool

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Record is one row of a pool, as read. Nothing about it is trusted yet:
// the path may be null or not UTF-8 and the blob may be anything.
type Record struct {
	Index    int64  // position in the pool, across shards
	Path     string // raw bytes of the path value
	PathNull bool
	Blob     []byte
	BlobNull bool
	Err      error // a per-row read problem (e.g. a task directory that cannot be packed)
	// Solution is the row's solution_binary (a solution supplied beside
	// the task: see ColSolutionBinary), nil when the pool has no such
	// column or the value is null. It is never borrowed.
	Solution []byte

	// Where the row came from, for messages: a file and a row in it
	// (parquet), or a file alone (a task directory). Formatted only when a
	// message needs it: one string per row was a measurable share of
	// reading a 20,000-row pool.
	originFile string
	originRow  int64 // -1: no row number
}

// Origin says where the row came from, for messages ("file.parquet row 12",
// or a task directory).
func (r Record) Origin() string {
	if r.originRow < 0 || r.originFile == "" {
		return r.originFile
	}
	return r.originFile + " row " + strconv.FormatInt(r.originRow, 10)
}

// Source is a re-readable pool.
type Source interface {
	// Each calls fn for every record in pool order. Returning an error from
	// fn stops the iteration with that error. A nil skip means "read all";
	// otherwise rows where skip(index) is true are not materialised (their
	// blob is not read when the format allows it).
	Each(ctx context.Context, skip func(int64) bool, fn func(Record) error) error
	// Len is the number of records.
	Len() int64
	// String describes the pool for logs.
	String() string
}

// Lender is a Source that can lend its blobs instead of copying them,
// for a caller that copies what it keeps into memory of its own.
type Lender interface {
	// EachBorrowed is Each, except that a record's Blob is valid only
	// until fn returns.
	EachBorrowed(ctx context.Context, skip func(int64) bool, fn func(Record) error) error
}

// Open detects the kind of pool named by spec: a parquet file, a glob of
// parquet files, a directory of parquet shards (searched recursively, as
// in the HF layout data/train-00000-of-00004.parquet), or a directory of
// task directories.
func Open(spec string) (Source, error) {
	if strings.ContainsAny(spec, "*?[") {
		files, err := filepath.Glob(spec)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", spec, err)
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("pool %s: no file matches", spec)
		}
		sort.Strings(files)
		return OpenParquet(files...)
	}
	info, err := os.Stat(spec)
	if err != nil {
		return nil, fmt.Errorf("pool: %w", err)
	}
	if !info.IsDir() {
		return OpenParquet(spec)
	}
	shards, err := findParquet(spec)
	if err != nil {
		return nil, err
	}
	if len(shards) > 0 {
		return OpenParquet(shards...)
	}
	return OpenTaskDirs(spec)
}

func findParquet(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() && isTaskDir(p) {
			// A task's own files (a .parquet under environment/ included)
			// are never shards.
			if len(files) == 0 {
				return filepath.SkipAll // a folder of tasks, not of shards
			}
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pool %s: %w", root, err)
	}
	sort.Strings(files)
	return files, nil
}

// Find returns the first record of src whose path is path.
func Find(ctx context.Context, src Source, path string) (Record, error) {
	var found *Record
	errFound := fmt.Errorf("found")
	err := src.Each(ctx, nil, func(r Record) error {
		if !r.PathNull && r.Path == path {
			found = &r
			return errFound
		}
		return nil
	})
	if found != nil {
		return *found, nil
	}
	if err != nil {
		return Record{}, err
	}
	return Record{}, fmt.Errorf("no task with path %q in %s", path, src)
}
