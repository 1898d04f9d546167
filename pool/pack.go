package pool

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/otcurate/otcurate/beneath"
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

// ReasonTargetExists and ReasonTargetThroughSymlink are unpack problems
// that come from the destination, not from the row.
const (
	ReasonTargetExists         = "target_exists"
	ReasonTargetThroughSymlink = "target_through_symlink"
)

// Unpack extracts every row of src into dest/<path>, safely: unusable path
// values (unsafe, duplicate or nested under another row's path) and broken
// bundles are reported and skipped; each task is extracted into a staging
// directory inside dest and renamed into place, so no partial task is ever
// left. Every path below dest is created, replaced or removed without
// following a symlink (see package beneath), so nothing is written or
// removed outside dest: a destination path that passes through a symlink
// already in dest is reported, and --overwrite replaces a symlink at the
// task's own path without following it.
func Unpack(ctx context.Context, src Source, dest string, opts UnpackOptions) (*PackResult, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	root, err := beneath.Open(dest)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	res := &PackResult{}
	problem := func(p, reason, detail string) {
		res.Problems = append(res.Problems, Problem{Path: p, Reason: reason, Detail: detail})
	}
	var paths PathSet
	err = src.Each(ctx, nil, func(rec Record) error {
		if reason, detail := PathProblem(rec); reason != "" {
			problem(rec.Path, reason, detail)
			return nil
		}
		if reason, detail := paths.Claim(rec); reason != "" {
			problem(rec.Path, reason, detail)
			return nil
		}
		if rec.BlobNull || len(rec.Blob) == 0 {
			problem(rec.Path, bundle.ReasonEmptyBlob, rec.Origin()+": task_binary is empty or null")
			return nil
		}
		target := filepath.Join(dest, filepath.FromSlash(rec.Path))
		exists, err := root.Exists(rec.Path)
		if errors.Is(err, beneath.ErrSymlink) {
			problem(rec.Path, ReasonTargetThroughSymlink, fmt.Sprintf("%s: %v; unpack never writes through a symlink", target, err))
			return nil
		}
		if err != nil {
			return err
		}
		if exists && !opts.Overwrite {
			problem(rec.Path, ReasonTargetExists, target+" already exists (use --overwrite to replace)")
			return nil
		}
		// A fresh, unpredictable staging name (ExtractAt creates it
		// exclusively): a fixed one could be an earlier row's path.
		stage := fmt.Sprintf(".otcurate-unpack-%d-%s.tmp", rec.Index, rand.Text()[:12])
		if err := bundle.ExtractAt(bytes.NewReader(rec.Blob), root, stage, opts.Limits); err != nil {
			if d, ok := bundle.AsDefect(err); ok {
				problem(rec.Path, d.Reason, rec.Origin()+": "+d.Detail)
				return nil
			}
			return fmt.Errorf("%s: %w", rec.Origin(), err)
		}
		// The old tree goes only once the new one is ready. A symlink at
		// the target is removed as a link.
		err = root.RemoveAll(rec.Path)
		if err == nil {
			err = root.MkdirAll(path.Dir(rec.Path), 0o755)
		}
		if err == nil {
			err = root.Rename(stage, rec.Path)
		}
		if err != nil {
			_ = root.RemoveAll(stage)
			if errors.Is(err, beneath.ErrSymlink) {
				problem(rec.Path, ReasonTargetThroughSymlink, fmt.Sprintf("%s: %v; unpack never writes through a symlink", target, err))
				return nil
			}
			return err
		}
		res.Written++
		return nil
	})
	return res, err
}
