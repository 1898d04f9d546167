package poolgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
)

func TestDefectKinds(t *testing.T) {
	want := []string{
		"absolute_member", "build_fails", "build_slow", "device_file", "dotdot_member", "duplicate", "empty_blob",
		"flaky_verifier", "gzip_bomb", "hanging_verifier", "instruction_reveals", "invalid_task_toml", "link_escape",
		"missing_environment", "missing_instruction", "missing_task_toml", "missing_test_script", "network_verifier",
		"no_solution", "nop_passes", "not_gzip", "not_tar", "reward_garbage", "reward_missing", "slow_verifier",
		"tests_in_image", "too_many_members", "truncated_gzip", "wrong_oracle",
	}
	if got := DefectKinds(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DefectKinds() = %v", got)
	}
	total := DefaultRates().Total()
	if total < 0.22 || total > 0.28 {
		t.Errorf("default rates add up to %.3f, want about 0.25", total)
	}
	if len(NoDefects()) != 0 || NoDefects() == nil {
		t.Error("NoDefects should be empty and non-nil")
	}
	for _, k := range want {
		stage, reason, ok := DefectStage(k)
		if !ok || stage == "" {
			t.Errorf("%s: no stage", k)
		}
		if stage == StageValidate && reason == "" {
			t.Errorf("%s: validate-stage defect without a reason code", k)
		}
	}
}

func TestOptionsErrors(t *testing.T) {
	emit := func(Task) error { return nil }
	if err := Generate(context.Background(), Options{N: 3, Rates: Rates{"nope": 0.1}}, emit); err == nil {
		t.Error("unknown defect kind accepted")
	}
	if err := Generate(context.Background(), Options{N: 3, Rates: Rates{"duplicate": 0.7, "no_solution": 0.5}}, emit); err == nil {
		t.Error("rates adding up to more than 1 accepted")
	}
	boom := errors.New("boom")
	n := 0
	err := Generate(context.Background(), Options{N: 50, Seed: 1, ChunkSize: 10}, func(Task) error {
		n++
		if n == 15 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 15 {
		t.Errorf("emit error: got %v after %d tasks", err, n)
	}
	if err := Generate(context.Background(), Options{N: 5, Python: "/nonexistent/python3"}, emit); err == nil {
		t.Error("a missing interpreter should fail Generate")
	}
}

func fingerprint(t *testing.T, tasks []Task) ([][]byte, []byte) {
	var blobs [][]byte
	var labels []Label
	for _, tk := range tasks {
		blobs = append(blobs, blobOf(t, tk))
		labels = append(labels, tk.Label)
	}
	var buf bytes.Buffer
	if err := WriteLabels(&buf, labels); err != nil {
		t.Fatal(err)
	}
	return blobs, buf.Bytes()
}

// sameTasks fails t, saying why (e.g. "with the same seed"), unless two
// generated pools hold the same labels and the same bytes in order.
func sameTasks(t *testing.T, a, b []Task, why string) {
	t.Helper()
	ba, la := fingerprint(t, a)
	bb, lb := fingerprint(t, b)
	if !bytes.Equal(la, lb) {
		t.Fatalf("labels differ %s", why)
	}
	for i := range ba {
		if !bytes.Equal(ba[i], bb[i]) {
			t.Fatalf("task %d differs %s", i, why)
		}
	}
}

func TestDeterminism(t *testing.T) {
	t.Parallel()
	rates := DefaultRates().Without(HeavyKinds...)
	for k := range rates {
		rates[k] *= 2.5 // more defects in a small pool
	}
	o := Options{N: 150, Seed: 42, Rates: rates}
	tasks := generate(t, o)
	b1, l1 := fingerprint(t, tasks)
	o2 := o
	o2.ChunkSize = 60 // chunking and parallel batches must not matter
	sameTasks(t, tasks, generate(t, o2), "between two runs with the same seed")
	o3 := o
	o3.Seed = 43
	b3, l3 := fingerprint(t, generate(t, o3))
	if bytes.Equal(l1, l3) {
		t.Fatal("different seeds gave the same labels")
	}
	same := 0
	for i := range b1 {
		if bytes.Equal(b1[i], b3[i]) {
			same++
		}
	}
	if same > len(b1)/50 {
		t.Errorf("%d of %d tasks identical across seeds", same, len(b1))
	}
	// Labels round-trip through JSON lines.
	got, err := ReadLabels(bytes.NewReader(l1))
	if err != nil || len(got) != o.N {
		t.Fatalf("ReadLabels: %v, %d labels", err, len(got))
	}
}

func TestPathsAndLabels(t *testing.T) {
	tasks := generate(t, Options{N: 120, Seed: 7, PathPrefix: "pymethods2test"})
	for i, tk := range tasks {
		if want := "pymethods2test-" + pad5(i); tk.Path != want || tk.Label.Path != want {
			t.Fatalf("task %d path %q / %q, want %q", i, tk.Path, tk.Label.Path, want)
		}
		if (tk.Entries == nil) == (tk.Blob == nil) {
			t.Errorf("%s: exactly one of Entries and Blob must be set", tk.Path)
		}
		l := tk.Label
		if l.Family != FamilyKata && l.Family != FamilyNL2Bash || !strings.HasPrefix(l.Template, l.Family+"/") || l.Dockerfile == "" {
			t.Errorf("%s: bad label %+v", tk.Path, l)
		}
		if l.Defect != "" {
			stage, reason, _ := DefectStage(l.Defect)
			if l.ExpectedStage != stage || l.ExpectedReason != reason {
				t.Errorf("%s: stage/reason %s/%s for %s", tk.Path, l.ExpectedStage, l.ExpectedReason, l.Defect)
			}
			if (tk.Blob != nil) != IsBlobDefect(l.Defect) {
				t.Errorf("%s: %s delivered as the wrong kind", tk.Path, l.Defect)
			}
		} else if l.ExpectedStage != "" || l.Params != nil || l.DuplicateOf != "" {
			t.Errorf("%s: good task with defect fields %+v", tk.Path, l)
		}
	}
	if pathWidth(100001) != 6 || pathWidth(100000) != 5 {
		t.Error("pathWidth")
	}
}

func pad5(i int) string {
	s := "00000" + itoa(i)
	return s[len(s)-5:]
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestFamilyCoverage checks that a pool of a few hundred tasks covers at
// least 30 kata families and both task families, and that good tasks are
// well formed: decodable by the safe decoder, with the required files and
// modes, byte-identical Dockerfiles per image id, and no accidental
// duplicates.
func TestFamilyCoverage(t *testing.T) {
	tasks := generate(t, Options{N: 400, Seed: 9, Rates: NoDefects()})
	katas := map[string]bool{}
	families := map[string]int{}
	shellTemplatesSeen := map[string]bool{}
	dockerfiles := map[string]string{}
	blobs := map[string]string{}
	for _, tk := range tasks {
		l := tk.Label
		families[l.Family]++
		parts := strings.Split(l.Template, "/")
		if l.Family == FamilyKata {
			katas[parts[1]] = true
		} else {
			shellTemplatesSeen[parts[1]] = true
		}
		blob := blobOf(t, tk)
		if prev, ok := blobs[string(blob)]; ok {
			t.Errorf("%s is byte-identical to %s without a duplicate label", tk.Path, prev)
		}
		blobs[string(blob)] = tk.Path
		members, files, err := decoded(blob)
		if err != nil {
			t.Fatalf("%s: %v", tk.Path, err)
		}
		required := []string{"instruction.md", "task.toml", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh"}
		if l.Family == FamilyKata {
			required = append(required, "tests/test_solution.py")
		} else {
			required = append(required, "tests/expected_output.txt")
		}
		for _, name := range required {
			if _, ok := files[name]; !ok {
				t.Errorf("%s: missing %s", tk.Path, name)
			}
		}
		for name, m := range members {
			if m.Kind != bundle.KindFile {
				continue
			}
			want := 0o644
			if strings.HasSuffix(name, ".sh") && !strings.HasPrefix(name, "environment/") {
				want = 0o755
			}
			if int(m.Mode) != want {
				t.Errorf("%s: %s has mode %o", tk.Path, name, m.Mode)
			}
		}
		df := string(files["environment/Dockerfile"])
		if prev, ok := dockerfiles[l.Dockerfile]; ok && prev != df {
			t.Errorf("%s: Dockerfile %s differs between tasks", tk.Path, l.Dockerfile)
		}
		dockerfiles[l.Dockerfile] = df
		ts := string(files["tests/test.sh"])
		if !strings.Contains(ts, "/logs/verifier/reward.txt") || strings.Contains(ts, "set -e") {
			t.Errorf("%s: test.sh does not write the reward safely", tk.Path)
		}
		instr := string(files["instruction.md"])
		if l.Family == FamilyKata && !strings.Contains(instr, "/app/solution.py") {
			t.Errorf("%s: instruction does not name /app/solution.py", tk.Path)
		}
	}
	// Every kata's oracle passes its tests and a missing solution fails
	// (one python3 process, no pytest).
	var jobs []checkJob
	var names []string
	for _, tk := range tasks {
		if tk.Label.Family != FamilyKata {
			continue
		}
		test := fileOf(tk, "tests/test_solution.py")
		code := solutionCode(tk)
		if code == "" {
			t.Fatalf("%s: cannot find the oracle's code", tk.Path)
		}
		jobs = append(jobs, checkJob{test, strp(code)}, checkJob{test, nil})
		names = append(names, tk.Path)
	}
	for i, r := range runChecker(t, jobs) {
		if want := i%2 == 0; r.Passed != want {
			t.Errorf("%s: passed=%v with solution=%v (%s)", names[i/2], r.Passed, want, r.Error)
		}
	}
	if len(katas) < 30 {
		t.Errorf("%d kata families in the pool, want >= 30", len(katas))
	}
	if families[FamilyKata] == 0 || families[FamilyNL2Bash] == 0 {
		t.Errorf("families: %v", families)
	}
	share := float64(families[FamilyKata]) / float64(len(tasks))
	if share < 0.62 || share > 0.78 {
		t.Errorf("kata share %.2f, want about 0.7", share)
	}
	if len(dockerfiles) > len(kataDockerfiles)+len(shellDockerfiles) {
		t.Errorf("%d distinct Dockerfiles", len(dockerfiles))
	}
	t.Logf("%d kata families, %d nl2bash templates, %d Dockerfiles", len(katas), len(shellTemplatesSeen), len(dockerfiles))
}

// TestRates checks the observed share of every defect in a pool of 2000
// against its default rate (4 standard deviations, plus slack for rare
// kinds), including the heavy codec kinds.
func TestRates(t *testing.T) {
	t.Parallel()
	const n = 2000
	rates := DefaultRates()
	counts := map[string]int{}
	err := Generate(context.Background(), Options{N: n, Seed: 2024, Rates: rates}, func(tk Task) error {
		counts[tk.Label.Defect]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kinds := DefectKinds()
	sort.Strings(kinds)
	for _, k := range kinds {
		p := rates[k]
		want := float64(n) * p
		tol := 4*math.Sqrt(want*(1-p)) + 3
		if got := float64(counts[k]); math.Abs(got-want) > tol {
			t.Errorf("%s: %v tasks, want %.1f +- %.1f", k, got, want, tol)
		}
	}
	good := float64(counts[""]) / n
	if good < 0.71 || good > 0.79 {
		t.Errorf("good share %.3f, want about 0.75", good)
	}
}

func TestRemapPaths(t *testing.T) {
	got := remapPaths(`cd /app && cat /app/solution.py /tests/x "/app" /output/r.txt /logs/verifier/reward.txt /var/lib/app /apple /solution/solve.sh x/app`, "/R")
	want := `cd /R/app && cat /R/app/solution.py /R/tests/x "/R/app" /R/output/r.txt /R/logs/verifier/reward.txt /var/lib/app /apple /R/solution/solve.sh x/app`
	if got != want {
		t.Errorf("remapPaths:\n got %s\nwant %s", got, want)
	}
}

// TestHostCheck runs Generate with HostCheck: every good task's oracle and
// verifier are run on the host during generation.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	generate(t, Options{N: 5, Seed: 31, HostCheck: true, Rates: Rates{DefectInstructionReveals: 0.2, DefectTestsInImage: 0.2}})
}

// BenchmarkGenerate measures generation without the heavy codec defects
// (20,000 tasks take about 10 s on 2 cores).
func BenchmarkGenerate(b *testing.B) {
	const n = 2000
	rates := DefaultRates().Without(HeavyKinds...)
	seed := int64(0)
	for b.Loop() {
		seed++
		if err := Generate(context.Background(), Options{N: n, Seed: seed, Rates: rates}, func(Task) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
}

// TestBalanced: a balanced shell pool of two rounds holds every template
// variant exactly twice, and chunking does not change it.
func TestBalanced(t *testing.T) {
	t.Parallel()
	o := Options{N: 2 * len(shellVariants), Seed: 9, KataShare: -1, Rates: NoDefects(), Balanced: true}
	tasks := generate(t, o)
	count := map[string]int{}
	for _, tk := range tasks {
		count[tk.Label.Template]++
	}
	if len(count) != len(shellVariants) {
		t.Fatalf("%d distinct variants in two rounds, want %d", len(count), len(shellVariants))
	}
	for tmpl, n := range count {
		if n != 2 {
			t.Errorf("%s: %d tasks, want 2", tmpl, n)
		}
	}
	o2 := o
	o2.ChunkSize = 7
	sameTasks(t, tasks, generate(t, o2), "with another chunking")
}
