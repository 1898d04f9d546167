package pool_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/otcurate/otcurate/pool"
)

// solutionRow is a pool row with the optional solution_binary column.
type solutionRow struct {
	Path     string  `parquet:"path"`
	Task     []byte  `parquet:"task_binary"`
	Solution *[]byte `parquet:"solution_binary,optional"`
}

// TestSolutionBinaryColumn: the optional column is read into
// Record.Solution (nil where null), a pool without it reads as before,
// and one whose solution_binary is not a flat binary column is refused
// with the file named.
func TestSolutionBinaryColumn(t *testing.T) {
	dir := t.TempDir()
	sol := []byte("a solution")
	name := filepath.Join(dir, "with.parquet")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[solutionRow](f)
	if _, err := w.Write([]solutionRow{{Path: "a", Task: []byte("A"), Solution: &sol}, {Path: "b", Task: []byte("B")}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err = src.(pool.Lender).EachBorrowed(context.Background(), nil, func(r pool.Record) error {
		if r.Solution == nil {
			got[r.Path] = "<nil>"
		} else {
			got[r.Path] = string(r.Solution)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != "a solution" || got["b"] != "<nil>" {
		t.Errorf("solutions read %v", got)
	}

	bad := filepath.Join(dir, "bad.parquet")
	f, err = os.Create(bad)
	if err != nil {
		t.Fatal(err)
	}
	type badRow struct {
		Path     string `parquet:"path"`
		Task     []byte `parquet:"task_binary"`
		Solution int64  `parquet:"solution_binary"`
	}
	bw := parquet.NewGenericWriter[badRow](f)
	if _, err := bw.Write([]badRow{{Path: "a", Task: []byte("A"), Solution: 3}}); err != nil {
		t.Fatal(err)
	}
	bw.Close()
	f.Close()
	if _, err := pool.Open(bad); err == nil {
		t.Error("a pool whose solution_binary is an integer column opened")
	}
}
