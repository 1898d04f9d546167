package filters

import (
	"fmt"
	"strings"
	"sync"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
)

// SolutionAttacher is the output's --attach-solutions (a
// pipeline.Attacher): a kept task that ships no solution/solve.sh but
// whose verifier gate proof was a supplied or a policy-discovered
// solution gets that solution as solution/ inside its task_binary, found
// where the gate found it (Solutions). Other tasks are written unchanged.
// A task whose solution can no longer be found or attached is written
// unchanged too, and listed in Missed.
type SolutionAttacher struct {
	Solutions Solutions
	Limits    bundle.Limits

	mu       sync.Mutex
	attached []string
	missed   []string
}

// Wants is true for kept tasks without a solution of their own whose gate
// decision stood on a supplied or a policy proof.
func (a *SolutionAttacher) Wants(t *pipeline.Task) bool {
	if t.HasSolution {
		return false
	}
	for _, m := range t.Marks {
		if m.Stage == StageFlaky && m.Verdict == pipeline.Keep {
			return m.Proof() == ProofSupplied || m.Proof() == ProofPolicy
		}
	}
	return false
}

// Attach returns the task's bundle with its solution appended (see
// bundle.Append), or rec.Blob unchanged when there is none to attach.
func (a *SolutionAttacher) Attach(t *pipeline.Task, rec pool.Record) ([]byte, error) {
	it := &pipeline.Item{Task: t, Record: rec}
	sol, problems := a.Solutions.find(it, a.Limits)
	if sol == nil {
		why := "no solution found (the discovered solution's solve.sh was not written, or the store or --solutions changed since the run)"
		if len(problems) > 0 {
			why = strings.Join(problems, "; ")
		}
		a.miss(t.Path, why)
		return rec.Blob, nil
	}
	var entries []bundle.Entry
	for _, f := range sol.files {
		e := bundle.Entry{Name: f.Name, Kind: f.Kind, Mode: f.Mode, Linkname: f.Linkname}
		if f.Kind == bundle.KindFile {
			e.Data = f.Data
			if e.Data == nil {
				e.Data = []byte{}
			}
		}
		entries = append(entries, e)
	}
	out, err := bundle.Append(rec.Blob, a.Limits, entries)
	if err != nil {
		a.miss(t.Path, fmt.Sprintf("%s: %v", sol.from, err))
		return rec.Blob, nil
	}
	a.mu.Lock()
	a.attached = append(a.attached, t.Path)
	a.mu.Unlock()
	return out, nil
}

func (a *SolutionAttacher) miss(path, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.missed = append(a.missed, path+": "+why)
}

// Attached lists the paths of the tasks that got a solution, in output
// order.
func (a *SolutionAttacher) Attached() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.attached...)
}

// Missed lists the tasks Wants chose that were written without a
// solution, each with the reason.
func (a *SolutionAttacher) Missed() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.missed...)
}
