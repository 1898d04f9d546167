package pool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/otcurate/otcurate/bundle"
)

// Problem is one row or task that a pack or unpack could not handle.
type Problem struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// PackResult summarises a pack.
type PackResult struct {
	Written  int64
	Problems []Problem
}

// Pack writes the tasks found under dirs (each a task directory or a folder
// of them) into a dataset file. Task paths are relative to each given
// folder (a task given directly is named by its base name). A task that
// cannot be packed is reported and skipped; a path found twice is an error,
// since the dataset would be ambiguous.
func Pack(ctx context.Context, dirs []string, out string) (*PackResult, error) {
	var sources []*TaskDirSource
	seen := map[string]string{}
	for _, d := range dirs {
		s, err := OpenTaskDirs(d)
		if err != nil {
			return nil, err
		}
		for _, p := range s.tasks {
			if prev, ok := seen[p]; ok {
				return nil, fmt.Errorf("task path %q found under both %s and %s", p, prev, d)
			}
			seen[p] = d
		}
		sources = append(sources, s)
	}
	w, err := Create(out, WriterOptions{})
	if err != nil {
		return nil, err
	}
	res := &PackResult{}
	for _, s := range sources {
		err := s.Each(ctx, nil, func(rec Record) error {
			if rec.Err != nil {
				res.Problems = append(res.Problems, Problem{Path: rec.Path, Reason: "unpackable_task", Detail: rec.Err.Error()})
				return nil
			}
			return w.Write(rec.Path, rec.Blob)
		})
		if err != nil {
			w.Abort()
			return nil, err
		}
	}
	res.Written = w.Rows()
	if err := w.Close(); err != nil {
		return nil, err
	}
	return res, nil
}

// UnpackOptions configure Unpack.
type UnpackOptions struct {
	Overwrite bool // replace existing task directories
	Limits    bundle.Limits
}

// Unpack extracts every row of src into dest/<path>, safely: unusable path
// values and broken bundles are reported and skipped, each task is
// extracted into a staging directory inside dest and renamed into place, so
// no partial task is ever left and nothing is written outside dest.
func Unpack(ctx context.Context, src Source, dest string, opts UnpackOptions) (*PackResult, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	res := &PackResult{}
	problem := func(p, reason, detail string) {
		res.Problems = append(res.Problems, Problem{Path: p, Reason: reason, Detail: detail})
	}
	err := src.Each(ctx, nil, func(rec Record) error {
		if reason, detail := PathProblem(rec); reason != "" {
			problem(rec.Path, reason, detail)
			return nil
		}
		if rec.BlobNull || len(rec.Blob) == 0 {
			problem(rec.Path, bundle.ReasonEmptyBlob, rec.Origin()+": task_binary is empty or null")
			return nil
		}
		target := filepath.Join(dest, filepath.FromSlash(rec.Path))
		if _, err := os.Lstat(target); err == nil {
			if !opts.Overwrite {
				problem(rec.Path, "target_exists", target+" already exists (use --overwrite to replace)")
				return nil
			}
			if err := os.RemoveAll(target); err != nil {
				return err
			}
		}
		stage := filepath.Join(dest, fmt.Sprintf(".otcurate-unpack-%d.tmp", rec.Index))
		os.RemoveAll(stage)
		if err := bundle.Extract(bytes.NewReader(rec.Blob), stage, opts.Limits); err != nil {
			if d, ok := bundle.AsDefect(err); ok {
				problem(rec.Path, d.Reason, rec.Origin()+": "+d.Detail)
				return nil
			}
			return fmt.Errorf("%s: %w", rec.Origin(), err)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			os.RemoveAll(stage)
			return err
		}
		if err := os.Rename(stage, target); err != nil {
			os.RemoveAll(stage)
			return err
		}
		res.Written++
		return nil
	})
	return res, err
}
