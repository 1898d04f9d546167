package rundir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/otcurate/otcurate/atomicfile"
	"github.com/otcurate/otcurate/pool"
)

// ShardRun is one shard's run directory, loaded.
type ShardRun struct {
	Dir   string
	Sum   Summary
	Shard Shard
	Tasks []*Task // from the manifest, in pool order
}

// LoadShardRuns reads the summaries and manifests of the run directories
// of a sharded run (`build --shard I/N`) and checks that they are the N
// shards of one pool, run with the same stages. The layout is the stages'
// format.
func LoadShardRuns(dirs []string, layout Layout) ([]*ShardRun, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no run directories")
	}
	var runs []*ShardRun
	byIndex := map[int]string{}
	for _, d := range dirs {
		r := &ShardRun{Dir: d}
		sum, err := ReadSummary(d)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		r.Sum = *sum
		if r.Sum.Shard == "" {
			r.Shard = Shard{Index: 0, Count: 1}
		} else if r.Shard, err = ParseShard(r.Sum.Shard); err != nil {
			return nil, fmt.Errorf("merge: %s: %w", d, err)
		}
		if prev, dup := byIndex[r.Shard.Index]; dup {
			return nil, fmt.Errorf("merge: %s and %s are both shard %s", prev, d, r.Shard)
		}
		byIndex[r.Shard.Index] = d
		if first := runs; len(first) > 0 {
			f := first[0]
			switch {
			case f.Shard.Count != r.Shard.Count:
				return nil, fmt.Errorf("merge: %s is shard %s but %s is shard %s", f.Dir, f.Shard, d, r.Shard)
			case !slices.Equal(f.Sum.Stages, r.Sum.Stages):
				return nil, fmt.Errorf("merge: %s ran stages %v but %s ran %v", f.Dir, f.Sum.Stages, d, r.Sum.Stages)
			case f.Sum.PoolRows != r.Sum.PoolRows:
				return nil, fmt.Errorf("merge: %s read a %d-row pool but %s a %d-row one", f.Dir, f.Sum.PoolRows, d, r.Sum.PoolRows)
			}
		}
		if r.Tasks, err = ReadManifest(filepath.Join(d, ManifestFile), r.Sum.Stages, layout); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		runs = append(runs, r)
	}
	if n := runs[0].Shard.Count; len(runs) != n {
		return nil, fmt.Errorf("merge: %d run directories for %d shards", len(runs), n)
	}
	return runs, nil
}

// Add adds another run's funnel line of the same stage to s (seconds are
// summed: machine time, not wall time).
func (dst *StageSummary) Add(src *StageSummary) {
	dst.In += src.In
	dst.Kept += src.Kept
	dst.Dropped += src.Dropped
	dst.Errors += src.Errors
	for k, v := range src.DroppedByReason {
		dst.DroppedByReason[k] += v
	}
	for k, v := range src.ErrorsByReason {
		dst.ErrorsByReason[k] += v
	}
	for k, v := range src.FlaggedByReason {
		dst.FlaggedByReason[k] += v
	}
	dst.Seconds += src.Seconds // summed over shards (machine time, not the merged wall time)
	dst.BusySeconds += src.BusySeconds
	dst.Runs += src.Runs
	dst.SandboxSeconds += src.SandboxSeconds
	dst.FromLedger += src.FromLedger
	for k, p := range src.Proofs {
		if dst.Proofs == nil {
			dst.Proofs = map[string]*ProofStat{}
		}
		if dst.Proofs[k] == nil {
			dst.Proofs[k] = &ProofStat{}
		}
		dst.Proofs[k].add(p)
	}
}

// MergeLedgers concatenates the shards' ledgers into the file name (entries are keyed by
// content hash, so they do not collide).
func MergeLedgers(runs []*ShardRun, name string) error {
	var b bytes.Buffer
	for _, r := range runs {
		data, err := os.ReadFile(filepath.Join(r.Dir, LedgerFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			b.Write(data[:i+1]) // drop a torn last line
		}
	}
	return atomicfile.Write(name, b.Bytes())
}

// ShardOutputs reads the shards' output datasets as one pool in pool
// order: each row gets its pool index back (from the manifests) and the
// shards, each in pool order, are merged by index.
type ShardOutputs struct {
	parts []pool.Source
	index map[string]int64
	n     int64
}

// OpenShardOutputs opens the shards' outputs; tasks are the merged
// tasks, whose survivors (Alive) the outputs hold.
func OpenShardOutputs(runs []*ShardRun, tasks []*Task) (*ShardOutputs, error) {
	m := &ShardOutputs{index: map[string]int64{}}
	for _, t := range tasks {
		if t.Alive {
			m.index[t.Path] = t.Index
		}
	}
	for _, r := range runs {
		for _, o := range r.Sum.Output {
			src, err := pool.Open(o)
			if err != nil {
				return nil, fmt.Errorf("merge: shard output of %s: %w", r.Dir, err)
			}
			m.parts = append(m.parts, src)
			m.n += src.Len()
		}
	}
	return m, nil
}

// Len implements pool.Source.
func (m *ShardOutputs) Len() int64 { return m.n }

// String implements pool.Source.
func (m *ShardOutputs) String() string { return fmt.Sprintf("%d shard outputs", len(m.parts)) }

// Each implements pool.Source.
func (m *ShardOutputs) Each(parent context.Context, skip func(int64) bool, fn func(pool.Record) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	chans := make([]chan pool.Record, len(m.parts))
	errs := make([]error, len(m.parts))
	var wg sync.WaitGroup
	for i, p := range m.parts {
		ch := make(chan pool.Record, 2)
		chans[i] = ch
		wg.Go(func() {
			defer close(ch)
			errs[i] = p.Each(ctx, nil, func(r pool.Record) error {
				idx, ok := m.index[r.Path]
				if !ok {
					return fmt.Errorf("%s: task %q is not a survivor in the shard manifests", r.Origin(), r.Path)
				}
				if skip != nil && skip(idx) {
					return nil
				}
				r.Index, r.Blob = idx, bytes.Clone(r.Blob)
				select {
				case ch <- r:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		})
	}
	heads := make([]*pool.Record, len(chans))
	next := func(i int) {
		if r, ok := <-chans[i]; ok {
			heads[i] = &r
		} else {
			heads[i] = nil
		}
	}
	for i := range chans {
		next(i)
	}
	var err error
	for {
		best := -1
		for i, h := range heads {
			if h != nil && (best < 0 || h.Index < heads[best].Index) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		if err = fn(*heads[best]); err != nil {
			break
		}
		next(best)
	}
	cancel()
	for i := range chans {
		for range chans[i] { // let the readers finish
		}
	}
	wg.Wait()
	if err != nil {
		return err
	}
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return e
		}
	}
	return parent.Err()
}

// SolutionsMerge is what MergeSolutions did.
type SolutionsMerge struct {
	Copied    int // entries copied into the merged store
	Identical int // entries a later shard (or the merged store) already held byte for byte
	// Conflicts describe entries two shards hold with different bytes:
	// the first shard's (in the order of the run directories) was kept.
	Conflicts []string
}

// MergeSolutions copies every shard's store of discovered solutions
// (RUN_DIR/<store>/<key>/..., the key a sha256 of the task's bytes) into
// dst, one entry (a key's directory) at a time, so the merged run
// directory finds the proofs its shards paid for. An entry several shards
// hold must be the same bytes (same key, same task); when they differ the
// first is kept and the difference reported, never mixed file by file.
// An entry already in dst counts as the first. Shards without a store are
// skipped.
func MergeSolutions(runs []*ShardRun, store, dst string) (SolutionsMerge, error) {
	var res SolutionsMerge
	from := map[string]string{} // key → the shard directory its entry came from
	for _, r := range runs {
		src := filepath.Join(r.Dir, store)
		keys, err := os.ReadDir(src)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("merge: solutions: %w", err)
		}
		for _, k := range keys {
			if !k.IsDir() {
				continue
			}
			entry, err := readEntry(filepath.Join(src, k.Name()))
			if err != nil {
				return res, fmt.Errorf("merge: solutions: %w", err)
			}
			target := filepath.Join(dst, k.Name())
			have, err := readEntry(target)
			switch {
			case errors.Is(err, os.ErrNotExist):
				if err := writeEntry(target, entry); err != nil {
					return res, fmt.Errorf("merge: solutions: %w", err)
				}
				from[k.Name()] = r.Dir
				res.Copied++
			case err != nil:
				return res, fmt.Errorf("merge: solutions: %w", err)
			case entriesEqual(have, entry):
				res.Identical++
				if from[k.Name()] == "" {
					from[k.Name()] = r.Dir
				}
			default:
				first := from[k.Name()]
				if first == "" {
					first = "the merged run directory (from an earlier merge)"
				}
				res.Conflicts = append(res.Conflicts, fmt.Sprintf("%s: the entry in %s differs from the one taken from %s, which was kept", k.Name(), src, first))
			}
		}
	}
	return res, nil
}

// entryFile is one file of a solutions entry.
type entryFile struct {
	data []byte
	mode os.FileMode
}

// readEntry reads the regular files below dir by slash-separated path.
func readEntry(dir string) (map[string]entryFile, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	out := map[string]entryFile{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = entryFile{data: data, mode: info.Mode().Perm()}
		return nil
	})
	return out, err
}

func entriesEqual(a, b map[string]entryFile) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || x.mode != y.mode || !bytes.Equal(x.data, y.data) {
			return false
		}
	}
	return true
}

// writeEntry writes an entry as dir, whole: into a temporary sibling
// renamed into place, so an interrupted merge leaves no half entry.
func writeEntry(dir string, files map[string]entryFile) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".merging-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for rel, f := range files {
		name := filepath.Join(tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(name, f.mode); err != nil { // not narrowed by the umask
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}
