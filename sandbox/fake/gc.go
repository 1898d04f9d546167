package fake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/otcurate/otcurate/sandbox"
)

// GC removes what runs left behind in the state directory: sandboxes and
// build containers (their init is killed when it still runs) and, with
// opts.Images, built images, selected by the run id and owner recorded at
// creation, with the Docker janitor's rules (ExceptRun, Run, OrphansOnly).
// Sandboxes of this backend that are still tracked are stopped through
// their handles.
func (b *Backend) GC(ctx context.Context, opts sandbox.GCOptions) (sandbox.GCReport, error) {
	var rep sandbox.GCReport
	var errs []error
	keep := func(run, owner string) bool {
		if opts.OrphansOnly && sandbox.OwnerAlive(owner) {
			return true
		}
		return (opts.ExceptRun != "" && run == opts.ExceptRun) || (opts.Run != "" && run != opts.Run)
	}
	live := map[string]*fakeSandbox{}
	b.mu.Lock()
	for s := range b.live {
		live[s.c.dir] = s
	}
	b.mu.Unlock()

	dirs, err := stateDirs(b.dir)
	if err != nil {
		return rep, infra("gc", err)
	}
	for _, dir := range dirs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		m, err := readMeta(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // being created
			}
			m = meta{} // unreadable: an orphan
		}
		if keep(m.Run, m.Owner) {
			continue
		}
		if s := live[dir]; s != nil {
			if err := s.Stop(ctx); err != nil {
				errs = append(errs, err)
				continue
			}
		} else {
			killInit(m)
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, fmt.Errorf("sandbox %s: %w", filepath.Base(dir), err))
				continue
			}
		}
		rep.Containers = append(rep.Containers, filepath.Base(dir)+" "+m.Kind)
	}

	if opts.Images {
		ents, err := os.ReadDir(imagesDir(b.dir))
		if err != nil {
			return rep, infra("gc", err)
		}
		for _, e := range ents {
			if e.IsDir() && strings.HasPrefix(e.Name(), ".old-") { // replaced by a rebuild
				if err := os.RemoveAll(filepath.Join(imagesDir(b.dir), e.Name())); err != nil {
					errs = append(errs, fmt.Errorf("image %s: %w", e.Name(), err))
				}
				continue
			}
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			m, err := readImageMeta(b.dir, e.Name())
			if err == nil && keep(m.Run, m.Owner) {
				continue
			}
			if err := os.RemoveAll(filepath.Join(imagesDir(b.dir), e.Name())); err != nil {
				errs = append(errs, fmt.Errorf("image %s: %w", e.Name(), err))
				continue
			}
			rep.Images = append(rep.Images, imageRepo+":"+e.Name())
		}
	}
	b.log.Info("gc done", "sandboxes", len(rep.Containers), "images", len(rep.Images), "errors", len(errs))
	if len(errs) > 0 {
		return rep, infra("gc", errors.Join(errs...))
	}
	return rep, nil
}

// killInit kills a recorded init when that PID is still the same process.
func killInit(m meta) {
	if m.Pid <= 0 {
		return
	}
	if st, err := procStart(m.Pid); err == nil && st == m.Start {
		_ = syscall.Kill(m.Pid, syscall.SIGKILL)
	}
}

// Sandboxes lists the state directories of a run's sandboxes and build
// containers: what GC would remove, or what a test left behind.
func (b *Backend) Sandboxes(run string) ([]string, error) {
	dirs, err := stateDirs(b.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		if m, err := readMeta(d); err == nil && m.Run == run {
			out = append(out, filepath.Base(d)+" "+m.Kind)
		}
	}
	return out, nil
}
