package poolgen

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestAllShellVariants runs every nl2bash template variant for real on the
// host (paths remapped under a temp dir): the verifier gives 1 after the
// oracle (so the expected output computed by the Python model
// equals what the oracle command produces), 0 after the wrong oracle, and 0
// on the initial state for the templates that edit files in place.
func TestAllShellVariants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := &batchRequest{Codes: map[string]string{}}
	var plans []*shellPlan
	for ti, st := range shellTemplates {
		for v := range st.Variants {
			r := taskRand(11, ti*10+v, 5)
			plans = append(plans, planShellVariant(r, st, v, "t"))
			plans[len(plans)-1].job(req)
		}
	}
	resp, err := runBatch(ctx, "python3", req)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	type run struct {
		name   string
		task   Task
		oracle bool
		want   string
	}
	var runs []run
	for i, p := range plans {
		sb, err := p.build(&resp.Shell[i])
		if err != nil {
			t.Fatal(err)
		}
		name := p.template()
		good := Task{Path: name, Entries: sb.d.entries()}
		runs = append(runs, run{name + "/oracle", good, true, "1"})
		if p.variant().Probe != resultProbe {
			// The task changes files in place (or writes elsewhere): the
			// untouched initial state must not pass. (For the other
			// templates /output/result.txt does not exist before the
			// oracle, and the expected output is never empty.)
			runs = append(runs, run{name + "/nop", good, false, "0"})
		}
		sb.d.solveSh = p.wrongOracle()
		runs = append(runs, run{name + "/wrong", Task{Path: name, Entries: sb.d.entries()}, true, "0"})
	}
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, rn := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := runOnHost(ctx, tmp, "python3", rn.task.Entries, rn.oracle, 30*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: %v", rn.name, err)
			} else if !res.HasFile || res.Reward != rn.want {
				t.Errorf("%s: reward %q (file %v), want %s\nexpected_output.txt:\n%s\n%s", rn.name, res.Reward, res.HasFile, rn.want,
					fileOf(rn.task, "tests/expected_output.txt"), lastLines(res.Output, 20))
			}
		}()
	}
	wg.Wait()
	t.Logf("%d host runs in %v", len(runs), time.Since(start))
}
