package poolgen

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// TestPyMethodsShape: the family's tasks have no solution/, carry the
// project (package, its tests, pyproject) in environment/ and copy it into
// the image, keep a hidden reference solution outside the bundle, and
// label every defect with the oracle-free gate's reason.
func TestPyMethodsShape(t *testing.T) {
	rates := Rates{}
	for _, k := range PyMethodsDefectKinds() {
		rates[k] = 0.15
	}
	tasks := generate(t, Options{N: 60, Seed: 11, PyMethodsShare: 1, PyMethodsRates: rates})
	kinds := map[string]int{}
	for _, tk := range tasks {
		l := tk.Label
		if l.Family != FamilyPyMethods {
			t.Fatalf("%s: family %q", tk.Path, l.Family)
		}
		kinds[l.Defect]++
		for _, e := range tk.Entries {
			if strings.HasPrefix(e.Name, "solution/") {
				t.Errorf("%s: ships %s", tk.Path, e.Name)
			}
		}
		if len(tk.Solution) != 1 || tk.Solution[0].Name != "solution/solve.sh" {
			t.Errorf("%s: hidden solution %v", tk.Path, tk.Solution)
		}
		df := fileOf(tk, "environment/Dockerfile")
		if !strings.Contains(df, "COPY tests/ /app/tests/") || !hasFile(tk, "environment/pyproject.toml") || !hasFile(tk, "tests/test_outputs.py") {
			t.Errorf("%s: not the project shape:\n%s", tk.Path, df)
		}
		var projTests int
		for _, e := range tk.Entries {
			if strings.HasPrefix(e.Name, "environment/tests/test_") {
				projTests++
			}
		}
		if projTests != 1 {
			t.Errorf("%s: %d project test files", tk.Path, projTests)
		}
		if l.Defect != "" && (l.ExpectedStage != StageFlaky || l.ExpectedReason != pyMethodsDefects[l.Defect].reason) {
			t.Errorf("%s: label %+v", tk.Path, l)
		}
		if l.Defect == DefectFlakyVerifier {
			if p, _ := l.Params["flake_prob"].(float64); p <= 0 || p >= 1 {
				t.Errorf("%s: flake_prob %v", tk.Path, l.Params["flake_prob"])
			}
		}
	}
	for _, k := range append(PyMethodsDefectKinds(), "") {
		if kinds[k] == 0 {
			t.Errorf("no task with defect %q in 60", k)
		}
	}
}

// TestPyMethodsShareKeepsOtherTasks: the family draws from streams of its
// own, so the tasks that are not pymethods tasks are the ones the same
// options give without the family (duplicates aside: their original is
// drawn among the good tasks generated before them).
func TestPyMethodsShareKeepsOtherTasks(t *testing.T) {
	base := generate(t, Options{N: 40, Seed: 3})
	mixed := generate(t, Options{N: 40, Seed: 3, PyMethodsShare: 0.3})
	n := 0
	for i := range mixed {
		if mixed[i].Label.Family == FamilyPyMethods {
			n++
			continue
		}
		if mixed[i].Label.Defect == DefectDuplicate {
			continue
		}
		if string(blobOf(t, mixed[i])) != string(blobOf(t, base[i])) || mixed[i].Label.Template != base[i].Label.Template {
			t.Errorf("%s changed with the pymethods share", mixed[i].Path)
		}
	}
	if n < 4 || n > 22 {
		t.Errorf("%d pymethods tasks of 40 at share 0.3", n)
	}
}

// TestPyMethodsSolvableAndDefectsAsLabelled proves the family on a sandbox
// backend (the fake in the fast tier): every clean task fails on the
// untouched project and passes with its hidden reference applied (so it is
// solvable from its instruction), and each defect behaves as its label
// says on the untouched project: nop_passes scores 1, reward_missing writes
// no reward, flaky_verifier scores 1 on some runs and 0 on others (and its
// reference passes every time), network_verifier tries the network, and
// slow_verifier runs past the gate's 20 s.
func TestPyMethodsSolvableAndDefectsAsLabelled(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	b, _ := sandboxtest.Backend(t, "test-pymethods-")
	rates := Rates{}
	for _, k := range PyMethodsDefectKinds() {
		rates[k] = 0.1
	}
	rates[DefectSlowVerifier] = 0.05
	rates[DefectFlakyVerifier] = 0.15
	// 24 tasks: 9 clean, 5 flaky, 3 of each other kind, 1 slow.
	tasks := generate(t, Options{N: 24, Seed: 7, PyMethodsShare: 1, PyMethodsRates: rates})
	runner := &trial.Runner{Backend: b}
	ctx := context.Background()
	run := func(tk Task, withSolution bool, agent trial.Agent, repeats int) []trial.Result {
		entries := tk.Entries
		if withSolution {
			entries = append(append([]bundle.Entry(nil), tk.Entries...), tk.Solution...)
		}
		blob, err := encode(entries)
		if err != nil {
			t.Fatal(err)
		}
		task, err := trial.LoadTask(tk.Path, blob, bundle.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tk.Path, err)
		}
		res, err := runner.Run(ctx, task, trial.Options{Agent: agent, Repeats: repeats})
		if err != nil {
			t.Fatalf("%s: %v", tk.Path, err)
		}
		return res
	}
	reward := func(r trial.Result) float64 {
		if r.Outcome != trial.Scored || r.Reward == nil {
			return -1
		}
		return *r.Reward
	}
	var mu sync.Mutex
	var flakyPasses, flakyRuns int
	var flakyExpected float64
	seen := map[string]int{}
	for _, tk := range tasks {
		tk := tk
		seen[tk.Label.Defect]++
		t.Run(tk.Path+"/"+tk.Label.Defect, func(t *testing.T) {
			sandboxtest.Parallel(t)
			l := tk.Label
			mode, _ := l.Params["mode"].(string)
			switch l.Defect {
			case "":
				nop := run(tk, false, trial.Nop, 1)[0]
				if reward(nop) != 0 {
					t.Errorf("untouched project: %s reward %v (%s)\n%s", nop.Outcome, nop.Reward, nop.Detail, nop.Log)
				}
				ref := run(tk, true, trial.Oracle, 1)[0]
				if reward(ref) != 1 {
					t.Errorf("hidden reference: %s reward %v (%s)\n%s", ref.Outcome, ref.Reward, ref.Detail, ref.Log)
				}
			case DefectNopPasses:
				nop := run(tk, false, trial.Nop, 1)[0]
				if reward(nop) != 1 {
					t.Errorf("%s: untouched project: %s reward %v (%s)\n%s", mode, nop.Outcome, nop.Reward, nop.Detail, nop.Log)
				}
			case DefectRewardMissing:
				nop := run(tk, false, trial.Nop, 1)[0]
				if nop.Outcome != trial.RewardMissing {
					t.Errorf("%s: untouched project: %s reward %v (%s)\n%s", mode, nop.Outcome, nop.Reward, nop.Detail, nop.Log)
				}
			case DefectFlakyVerifier:
				const runs = 6
				ones := 0
				for _, r := range run(tk, false, trial.Nop, runs) {
					switch reward(r) {
					case 1:
						ones++
					case 0:
					default:
						t.Errorf("%s: untouched project: %s (%s)\n%s", mode, r.Outcome, r.Detail, r.Log)
					}
				}
				for _, r := range run(tk, true, trial.Oracle, 3) {
					if reward(r) != 1 {
						t.Errorf("%s: hidden reference: %s reward %v (%s)\n%s", mode, r.Outcome, r.Reward, r.Detail, r.Log)
					}
				}
				p, _ := l.Params["flake_prob"].(float64)
				mu.Lock()
				flakyPasses += ones
				flakyRuns += runs
				flakyExpected += p * runs
				mu.Unlock()
			case DefectNetworkVerifier:
				nop := run(tk, false, trial.Nop, 1)[0]
				if nop.Outcome != trial.VerifierNeedsNetwork {
					t.Logf("%s: untouched project: %s reward %v (%s): the backend did not see the attempt\n%s", mode, nop.Outcome, nop.Reward, nop.Detail, nop.Log)
					if reward(nop) == 1 {
						t.Errorf("%s: a network-needing verifier passed offline", mode)
					}
				}
			case DefectSlowVerifier:
				nop := run(tk, false, trial.Nop, 1)[0]
				if nop.Durations.Verifier < 20 {
					t.Errorf("%s: verifier took %.1fs", mode, nop.Durations.Verifier)
				}
			}
		})
	}
	t.Cleanup(func() {
		t.Logf("defects: %v; flaky verifiers: %d of %d untouched runs passed (expected %.1f from flake_prob)", seen, flakyPasses, flakyRuns, flakyExpected)
		if flakyRuns > 0 && (flakyPasses == 0 || flakyPasses == flakyRuns) {
			t.Errorf("flaky verifiers: %d of %d untouched runs passed: not flaky", flakyPasses, flakyRuns)
		}
	})
}
