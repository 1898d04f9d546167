package pool_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/otcurate/otcurate/pool"
)

// readbackRows builds rows with one blob over 9 MiB: values that large made
// files unreadable in arrow readers when page statistics were kept.
func readbackRows(t *testing.T) []pool.Row {
	t.Helper()
	big := make([]byte, 10<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	rows := []pool.Row{{Path: "big-task", TaskBinary: big}}
	for i := 0; i < 250; i++ {
		rows = append(rows, pool.Row{Path: fmt.Sprintf("task-%04d", i), TaskBinary: []byte(fmt.Sprintf("blob %d", i))})
	}
	return rows
}

func writeRows(t *testing.T, name string, rows []pool.Row) {
	t.Helper()
	w, err := pool.Create(name, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r.Path, r.TaskBinary); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
}

func digest(rows []pool.Row) map[string][32]byte {
	m := make(map[string][32]byte, len(rows))
	for _, r := range rows {
		m[r.Path] = sha256.Sum256(r.TaskBinary)
	}
	return m
}

func TestWriterReadsBackInOwnReader(t *testing.T) {
	rows := readbackRows(t)
	name := filepath.Join(t.TempDir(), "out.parquet")
	writeRows(t, name, rows)
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if src.Len() != int64(len(rows)) {
		t.Fatalf("Len = %d, want %d", src.Len(), len(rows))
	}
	var i int
	err = src.Each(context.Background(), nil, func(r pool.Record) error {
		if r.Index != int64(i) || r.Path != rows[i].Path || sha256.Sum256(r.Blob) != sha256.Sum256(rows[i].TaskBinary) {
			return fmt.Errorf("row %d: got index %d path %q", i, r.Index, r.Path)
		}
		if r.PathNull || r.BlobNull {
			return fmt.Errorf("row %d read back as null", i)
		}
		if want := fmt.Sprintf("%s row %d", name, i); r.Origin() != want {
			return fmt.Errorf("row %d: Origin() = %q, want %q", i, r.Origin(), want)
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(rows) {
		t.Fatalf("read %d rows, want %d", i, len(rows))
	}
}

func TestWriterReadsBackInArrow(t *testing.T) {
	rows := readbackRows(t)
	name := filepath.Join(t.TempDir(), "out.parquet")
	writeRows(t, name, rows)

	rdr, err := file.OpenParquetFile(name, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	if got := rdr.NumRowGroups(); got < 3 {
		t.Errorf("row groups = %d, want ≥ 3 (≤ 100 rows each)", got)
	}
	for i := 0; i < rdr.NumRowGroups(); i++ {
		if n := rdr.MetaData().RowGroup(i).NumRows(); n > 100 {
			t.Errorf("row group %d has %d rows, want ≤ 100", i, n)
		}
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if schema.NumFields() != 2 || schema.Field(0).Name != "path" || schema.Field(1).Name != "task_binary" {
		t.Fatalf("schema = %v", schema)
	}
	if schema.Field(0).Type.Name() != "utf8" || schema.Field(1).Type.Name() != "binary" {
		t.Fatalf("types = %s, %s; want utf8, binary", schema.Field(0).Type, schema.Field(1).Type)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	want := digest(rows)
	got := 0
	for rr.Next() {
		rec := rr.RecordBatch()
		paths := rec.Column(0).(*array.String)
		blobs := rec.Column(1).(*array.Binary)
		for i := 0; i < int(rec.NumRows()); i++ {
			if want[paths.Value(i)] != sha256.Sum256(blobs.Value(i)) {
				t.Errorf("arrow: blob of %s differs", paths.Value(i))
			}
			got++
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(rows) {
		t.Fatalf("arrow read %d rows, want %d", got, len(rows))
	}
}

func TestWriterReadsBackInDuckDB(t *testing.T) {
	rows := readbackRows(t)
	name := filepath.Join(t.TempDir(), "out.parquet")
	writeRows(t, name, rows)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var cols string
	if err := db.QueryRow(`SELECT string_agg(column_name || ':' || column_type, ',' ORDER BY column_name) FROM (DESCRIBE SELECT * FROM read_parquet(?))`, name).Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if cols != "path:VARCHAR,task_binary:BLOB" {
		t.Fatalf("duckdb schema = %s", cols)
	}
	res, err := db.Query(`SELECT path, sha256(task_binary) FROM read_parquet(?)`, name)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	want := digest(rows)
	got := 0
	for res.Next() {
		var path, sum string
		if err := res.Scan(&path, &sum); err != nil {
			t.Fatal(err)
		}
		w := want[path]
		if sum != fmt.Sprintf("%x", w[:]) {
			t.Errorf("duckdb: blob of %s differs", path)
		}
		got++
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(rows) {
		t.Fatalf("duckdb read %d rows, want %d", got, len(rows))
	}
}
