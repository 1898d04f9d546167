package filters

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/trial"
)

// FlagSolutionUnreadable flags a task whose supplied solution could not be
// used (a solution_binary that is not a gzip tar holding solve.sh, a
// --solutions entry that cannot be packed): the task is judged on the rest
// of its evidence and the decision's detail says what was wrong.
const FlagSolutionUnreadable = "solution_unreadable"

// Solutions are the places the verifier gate looks for a solution of a
// task that ships none (no solution/solve.sh in its bundle), in order:
//
//  1. the pool row's solution_binary column (pool.ColSolutionBinary): a
//     gzip tar holding either a solution/ directory with solve.sh, or
//     solve.sh and its files at the top (the solution directory's
//     contents); both are accepted;
//  2. Dir (--solutions DIR): DIR/<task path>/solution/, or
//     DIR/<sha256 of the task's task_binary, hex>/solution/ (so a run
//     directory's solutions/ can be passed as DIR);
//  3. Store (RUN_DIR/solutions): the discovered solutions the policy
//     prover wrote, <sha256 of task_binary, hex>/solution/.
//
// The first usable one is run exactly like an oracle and gives proof
// "supplied". A bundle's own solution/ always wins: supplied solutions
// are not looked at for tasks that have one.
type Solutions struct {
	Dir   string
	Store string
}

// suppliedSolution is a solution found beside the pool for one task.
type suppliedSolution struct {
	files []*bundle.File // members named solution/..., retained
	from  string         // where it came from, for the decision detail
}

// userSolution returns the raw solution the user supplied for the task
// (the column's bytes or the packed --solutions directory) and where it
// came from; nil when there is none. The store of discovered solutions is
// not the user's: see find.
func (s Solutions) userSolution(it *pipeline.Item) (blob []byte, from string, err error) {
	if it.Record.Solution != nil {
		return it.Record.Solution, "the pool's solution_binary column", nil
	}
	if s.Dir == "" {
		return nil, "", nil
	}
	for _, key := range []string{filepath.FromSlash(it.Task.Path), taskBlobHash(it)} {
		if key == "" {
			continue
		}
		dir := filepath.Join(s.Dir, key, "solution")
		blob, err := packSolutionDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return blob, "--solutions " + dir, err
	}
	return nil, "", nil
}

// find returns the task's supplied solution, or nil, and a description of
// every source that was there but could not be used.
func (s Solutions) find(it *pipeline.Item, lim bundle.Limits) (*suppliedSolution, []string) {
	var problems []string
	blob, from, err := s.userSolution(it)
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s: %v", from, err))
	} else if blob != nil {
		sol, err := decodeSolution(blob, lim)
		if err == nil {
			sol.from = from
			return sol, nil
		}
		problems = append(problems, fmt.Sprintf("%s: %v", from, err))
	}
	if s.Store != "" {
		if h := taskBlobHash(it); h != "" {
			dir := filepath.Join(s.Store, h, "solution")
			blob, err := packSolutionDir(dir)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				problems = append(problems, fmt.Sprintf("discovered solution %s: %v", dir, err))
			default:
				sol, err := decodeSolution(blob, lim)
				if err == nil {
					sol.from = "the discovered solution " + dir
					return sol, problems
				}
				problems = append(problems, fmt.Sprintf("discovered solution %s: %v", dir, err))
			}
		}
	}
	return nil, problems
}

// taskBlobHash is the discovered-solution store's key of a task: the
// sha256 of its task_binary, hex ("" without the bytes).
func taskBlobHash(it *pipeline.Item) string {
	if len(it.Record.Blob) == 0 {
		return ""
	}
	sum := sha256.Sum256(it.Record.Blob)
	return hex.EncodeToString(sum[:])
}

// packSolutionDir packs a solution directory (its contents at the top of
// the archive) as a supplied solution blob. A missing directory is
// fs.ErrNotExist.
func packSolutionDir(dir string) ([]byte, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("not a directory")
	}
	var buf bytes.Buffer
	if err := bundle.EncodeDir(&buf, dir); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeSolution reads a supplied solution: a gzip tar with solution/solve.sh,
// or with solve.sh at the top, decoded by the bundle decoder under the
// pool's limits (so it is as safe as a task bundle).
func decodeSolution(blob []byte, lim bundle.Limits) (*suppliedSolution, error) {
	b, err := bundle.Scan(blob, lim, bundle.RetainAll(lim))
	if err != nil {
		return nil, fmt.Errorf("not a usable gzip tar: %s", strings.ReplaceAll(err.Error(), "task_binary", "the archive"))
	}
	prefix := ""
	switch {
	case b.Has("solution/solve.sh", bundle.KindFile):
		prefix = "solution/"
	case b.Has("solve.sh", bundle.KindFile):
	default:
		return nil, fmt.Errorf("holds no solve.sh (want solution/solve.sh, or solve.sh at the top)")
	}
	if len(b.Truncated) > 0 {
		return nil, fmt.Errorf("%s is too large to run", b.Truncated[0])
	}
	sol := &suppliedSolution{}
	for _, name := range b.Names {
		if !strings.HasPrefix(name, prefix) || name == "solution" {
			continue
		}
		f := *b.Files[name]
		f.Name = "solution/" + strings.TrimPrefix(name, prefix)
		if f.Kind == bundle.KindHardlink { // its content was copied by Scan
			f.Kind, f.Linkname = bundle.KindFile, ""
		}
		sol.files = append(sol.files, &f)
	}
	return sol, nil
}

// withSolution returns t with sol as its solution/ (the task's own
// bundle is not modified): the runner then runs it as the oracle.
func withSolution(t *trial.Task, sol *suppliedSolution) *trial.Task {
	b := *t.Bundle
	b.Files = make(map[string]*bundle.File, len(t.Bundle.Files)+len(sol.files)+1)
	maps.Copy(b.Files, t.Bundle.Files)
	b.Names = slices.DeleteFunc(slices.Clone(t.Bundle.Names), func(n string) bool {
		return n == "solution" || strings.HasPrefix(n, "solution/")
	})
	for n := range b.Files {
		if n == "solution" || strings.HasPrefix(n, "solution/") {
			delete(b.Files, n)
		}
	}
	b.Files["solution"] = &bundle.File{Member: bundle.Member{Name: "solution", Kind: bundle.KindDir, Mode: 0o755}}
	b.Names = append(b.Names, "solution")
	for _, f := range sol.files {
		b.Files[f.Name] = f
		b.Names = append(b.Names, f.Name)
	}
	sort.Strings(b.Names)
	info := *t.Info
	info.HasSolution = true
	return &trial.Task{Path: t.Path, Bundle: &b, Info: &info}
}

// SolutionsDirEntries lists the task keys (a task path, or a task_binary
// hash) DIR holds a solution for: every directory below DIR that has a
// solution/ subdirectory. The CLI compares them with the pool's paths and
// hashes after the run to name entries that matched no task.
func SolutionsDirEntries(dir string) ([]string, error) {
	var keys []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || d.Name() != "solution" || p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, filepath.Dir(p))
		if err != nil {
			return err
		}
		if rel != "." {
			keys = append(keys, filepath.ToSlash(rel))
		}
		return filepath.SkipDir
	})
	if err != nil {
		return nil, fmt.Errorf("--solutions %s: %w", dir, err)
	}
	sort.Strings(keys)
	return keys, nil
}

func sha256sum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
