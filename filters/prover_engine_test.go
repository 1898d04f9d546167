package filters_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/filters"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/policy/builtin"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/poolgen"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// proofCost sums what a proof paid for: sandbox sessions (a session's
// first result has repeat 0), verifier runs and sandbox-seconds (build,
// start, agent and teardown once per session, every verify phase).
func proofCost(rs []trial.Result) (sessions, runs int, seconds float64) {
	for _, r := range rs {
		if r.Repeat == 0 {
			sessions++
			d := r.Durations
			seconds += d.Build + d.Start + d.Solve + d.Teardown
		}
		if r.Sandboxes > 0 {
			runs++
			seconds += r.Durations.Verify
		}
	}
	return sessions, runs, seconds
}

// TestProverBuiltinOnNl2bash is issue 20's target for the prover: with the
// built-in policy as the prover, every solution-less generated nl2bash
// task it solves is proven (re-verification agrees, the replay of its
// keystrokes in a fresh sandbox reproduces the reward) and its solve.sh,
// rendered from the keystrokes, passes as an oracle. It runs on the fake
// backend and, with OTCURATE_SANDBOX=docker, on the engine; it logs what a
// proof costs.
func TestProverBuiltinOnNl2bash(t *testing.T) {
	sandboxtest.Parallel(t)
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-prover-nl2bash-")
	var tasks []poolgen.Task
	err := poolgen.Generate(context.Background(), poolgen.Options{N: 8, Seed: 5, KataShare: -1, Rates: poolgen.NoDefects(), Balanced: true},
		func(task poolgen.Task) error { tasks = append(tasks, task); return nil })
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	store := t.TempDir()
	p := filters.PolicyProver{Runner: &trial.Runner{Backend: d}, Labels: map[string]string{sandbox.LabelRun: runID},
		Policy: builtin.New(1), PolicyID: "builtin/cold-start", Attempts: 4, Reverify: 2, Replays: 1, SolutionsDir: store,
		Harness: agent.Config{MaxTurns: 6, Sampling: policy.Sampling{Temperature: 1, Seed: &seed}}}
	var solved, unsolved int
	var solvedSec, unsolvedSec float64
	var solvedSessions, unsolvedSessions, solvedRuns, unsolvedRuns int
	for _, task := range tasks {
		var entries []bundle.Entry
		for _, e := range task.Entries {
			if !strings.HasPrefix(e.Name, "solution/") && e.Name != "solution" {
				entries = append(entries, e)
			}
		}
		var buf bytes.Buffer
		if err := bundle.Encode(&buf, entries); err != nil {
			t.Fatal(err)
		}
		tk, err := trial.LoadTask(task.Path, buf.Bytes(), bundle.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if tk.Info.HasSolution {
			t.Fatalf("%s: solution/ not stripped", task.Path)
		}
		it := &pipeline.Item{Task: &pipeline.Task{Path: task.Path, Hash: tk.Bundle.ContentHash},
			Record: pool.Record{Path: task.Path, Blob: buf.Bytes()}, Bundle: tk.Bundle, Info: tk.Info}
		proof, err := p.Prove(context.Background(), it, tk)
		if err != nil {
			t.Fatal(err)
		}
		sessions, runs, sec := proofCost(proof.Runs)
		t.Logf("%s (%s): solved=%t %s/%s; %d sessions, %d verifier runs, %.1f sandbox-s; %s", task.Path, task.Label.Template,
			proof.Solved, proof.Verdict.Verdict, proof.Verdict.Reason, sessions, runs, sec, proof.Detail)
		if proof.Passes > 0 && !proof.Solved {
			t.Errorf("%s: an attempt passed but the task is not proven: %s/%s %s", task.Path, proof.Verdict.Verdict, proof.Verdict.Reason, proof.Verdict.Detail)
		}
		if proof.Verdict.Verdict != "" && proof.Passes == 0 {
			t.Errorf("%s: a clean task got a verdict without a pass: %s/%s %s", task.Path, proof.Verdict.Verdict, proof.Verdict.Reason, proof.Verdict.Detail)
		}
		if !proof.Solved {
			unsolved++
			unsolvedSec += sec
			unsolvedSessions += sessions
			unsolvedRuns += runs
			continue
		}
		solved++
		solvedSec += sec
		solvedSessions += sessions
		solvedRuns += runs
		if proof.Solution == "" {
			t.Errorf("%s: proven, but its solve.sh did not pass as an oracle: %s", task.Path, proof.Detail)
			continue
		}
		script, err := os.ReadFile(filepath.Join(proof.Solution, filters.SolutionSubdir, "solve.sh"))
		if err != nil {
			t.Errorf("%s: %v", task.Path, err)
		} else if solved == 1 {
			t.Logf("%s: the discovered solve.sh:\n%s", task.Path, script)
		}
	}
	if solved == 0 {
		t.Fatalf("the built-in policy proved none of %d nl2bash tasks in 4 attempts each", len(tasks))
	}
	t.Logf("proven %d of %d: per proven task %.1f sessions, %.1f verifier runs, %.1f sandbox-s", solved, len(tasks),
		float64(solvedSessions)/float64(solved), float64(solvedRuns)/float64(solved), solvedSec/float64(solved))
	if unsolved > 0 {
		t.Logf("unproven %d: per task %.1f sessions, %.1f verifier runs, %.1f sandbox-s", unsolved,
			float64(unsolvedSessions)/float64(unsolved), float64(unsolvedRuns)/float64(unsolved), unsolvedSec/float64(unsolved))
	}
}
