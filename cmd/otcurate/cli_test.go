package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/reports"
	"github.com/otcurate/otcurate/rundir"
)

const fixtures = "../../testdata/harbor-examples"

// run executes the CLI in-process and returns stdout and the exit code.
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append(args, "--log-level", "warn"))
	err := root.ExecuteContext(context.Background())
	code := exitCode(err, &errOut)
	t.Logf("otcurate %s → %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return out.String(), code
}

func TestPackBuildInspectUnpack(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ex.parquet")
	if _, code := run(t, "pack", fixtures, "-o", ds); code != 0 {
		t.Fatalf("pack exit %d", code)
	}
	out := filepath.Join(dir, "out.parquet")
	stdout, code := run(t, "build", "--pool", ds, "-o", out, "--run-dir", filepath.Join(dir, "run"), "--target", "3", "--seed", "4", "--stages", "validate,dedup,lint,select")
	if code != 0 || !strings.Contains(stdout, "5 tasks in, 3 kept") {
		t.Fatalf("build exit %d", code)
	}
	stdout, code = run(t, "inspect", out, "--json")
	if code != 0 {
		t.Fatalf("inspect exit %d", code)
	}
	var ins reports.Inspection
	if err := json.Unmarshal([]byte(stdout), &ins); err != nil {
		t.Fatal(err)
	}
	if ins.Rows != 3 || ins.Valid != 3 || len(ins.Columns) != 2 || ins.Columns[0].Name != "path" || ins.Columns[1].Name != "task_binary" {
		t.Fatalf("inspection = %+v", ins)
	}
	dest := filepath.Join(dir, "tasks")
	if _, code := run(t, "unpack", out, "-d", dest); code != 0 {
		t.Fatalf("unpack exit %d", code)
	}
	entries, _ := os.ReadDir(dest)
	if len(entries) != 3 {
		t.Fatalf("unpacked %d tasks, want 3", len(entries))
	}
	// A second unpack refuses to overwrite, row by row (exit 3).
	if _, code := run(t, "unpack", out, "-d", dest); code != exitItemFailure {
		t.Fatalf("second unpack exit %d, want %d", code, exitItemFailure)
	}
	if _, code := run(t, "unpack", out, "-d", dest, "--overwrite"); code != 0 {
		t.Fatalf("unpack --overwrite exit %d", code)
	}
}

func TestValidateReportsEachBrokenRow(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "pool.parquet")
	w, err := pool.Create(ds, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var good bytes.Buffer
	if err := bundle.EncodeDir(&good, filepath.Join(fixtures, "hello-user")); err != nil {
		t.Fatal(err)
	}
	w.Write("good", good.Bytes())
	w.Write("truncated", good.Bytes()[:good.Len()/2])
	w.Write("garbage", []byte("not a bundle at all"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	stdout, code := run(t, "validate", "--pool", ds)
	if code != exitItemFailure {
		t.Fatalf("exit %d, want %d", code, exitItemFailure)
	}
	for _, want := range []string{"truncated\ttruncated_gzip", "garbage\tnot_gzip"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if _, code := run(t, "build", "--pool", ds, "-o", filepath.Join(dir, "o.parquet"), "--run-dir", filepath.Join(dir, "r"), "--stages", "validate,nosuch"); code != exitUsage {
		t.Errorf("unknown stage: exit %d, want %d", code, exitUsage)
	}
	if _, code := run(t, "build", "--pool", ds, "-o", filepath.Join(dir, "o.parquet"), "--run-dir", filepath.Join(dir, "r"), "--stages", "validate,difficulty", "--difficulty-rule", "median"); code != exitUsage {
		t.Errorf("bad difficulty rule: exit %d, want %d", code, exitUsage)
	}
}

// TestCtrlC sends SIGINT to a real build and expects exit 130, a summary
// marked interrupted, well-formed decisions and no output file.
func TestCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "otcurate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ds := filepath.Join(dir, "pool.parquet")
	w, err := pool.Create(ds, pool.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30000; i++ {
		var b bytes.Buffer
		bundle.Encode(&b, []bundle.Entry{
			{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(fmt.Sprintf("task %d", i))},
			{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("")},
			{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian\n")},
			{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("true")},
		})
		w.Write(fmt.Sprintf("t%05d", i), b.Bytes())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	cmd := exec.Command(bin, "build", "--pool", ds, "-o", filepath.Join(dir, "out.parquet"), "--run-dir", runDir, "--workers", "1", "--stages", "validate,dedup,lint,select")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := os.Stat(filepath.Join(runDir, rundir.DecisionsFile))
		if err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no decisions written within 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d (%v), want 130\n%s", code, err, stderr.String())
	}
	var sum pipeline.Summary
	data, err := os.ReadFile(filepath.Join(runDir, rundir.SummaryFile))
	if err != nil || json.Unmarshal(data, &sum) != nil || !sum.Interrupted {
		t.Fatalf("summary.json missing or not interrupted: %v\n%s", err, data)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(runDir, rundir.DecisionsFile))), "\n")
	for _, l := range lines {
		var d pipeline.Decision
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("malformed decision line %q", l)
		}
	}
	if len(lines) >= 30000 {
		t.Fatalf("run was not interrupted (%d decisions)", len(lines))
	}
	if _, err := os.Stat(filepath.Join(dir, "out.parquet")); err == nil {
		t.Error("output written by an interrupted run")
	}
}

func readFile(t *testing.T, name string) string {
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestFilterOneStage runs lint alone on the sample pool.
func TestFilterOneStage(t *testing.T) {
	dir := t.TempDir()
	stdout, code := run(t, "filter", "--stage", "lint", "--in", "../../testdata/sample-pool.parquet",
		"-o", filepath.Join(dir, "out.parquet"), "--run-dir", filepath.Join(dir, "run"))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var sum pipeline.Summary
	data, err := os.ReadFile(filepath.Join(dir, "run", rundir.SummaryFile))
	if err != nil || json.Unmarshal(data, &sum) != nil {
		t.Fatalf("summary: %v", err)
	}
	if len(sum.Funnel) != 2 || sum.Funnel[1].Stage != "lint" || sum.TasksKept != int64(len(readOutputPaths(t, filepath.Join(dir, "out.parquet")))) {
		t.Fatalf("funnel %+v, kept %d\n%s", sum.Funnel, sum.TasksKept, stdout)
	}
	if _, code := run(t, "filter", "--stage", "nosuch", "--in", "../../testdata/sample-pool.parquet",
		"-o", filepath.Join(dir, "o2.parquet"), "--run-dir", filepath.Join(dir, "r2")); code != exitUsage {
		t.Fatalf("unknown stage: exit %d", code)
	}
}

func readOutputPaths(t *testing.T, name string) []string {
	src, err := pool.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	src.Each(context.Background(), nil, func(r pool.Record) error { out = append(out, r.Path); return nil })
	return out
}

// TestPolicyCommandsRejectBadFlags: the policy commands refuse what they
// cannot honour before touching a sandbox.
func TestPolicyCommandsRejectBadFlags(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{"train", "--data", "../../testdata/sample-pool.parquet", "--run-dir", dir, "--temperature", "0"},
		{"train", "--data", "../../testdata/sample-pool.parquet", "--run-dir", dir, "--policy", "gpt"},
		{"traces", "--data", "../../testdata/sample-pool.parquet", "-o", filepath.Join(dir, "s.parquet"), "--policy", "gpt"},
		{"run", "../../testdata/harbor-examples/hello-world", "--agent", "robot"},
		{"build", "--pool", "../../testdata/sample-pool.parquet", "-o", filepath.Join(dir, "o.parquet"), "--run-dir", dir,
			"--stages", "validate,difficulty", "--difficulty-band", "0.9,0.1", "--difficulty-rule", "band"},
	}
	for _, args := range cases {
		if _, code := run(t, args...); code != exitUsage {
			t.Errorf("otcurate %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
}

// TestShardAndMergeCLI builds the sample pool's static stages in two
// shards, merges them with a target, and compares the kept paths with a
// single run's.
func TestShardAndMergeCLI(t *testing.T) {
	dir := t.TempDir()
	static := "validate,dedup,lint,select"
	one := filepath.Join(dir, "one.parquet")
	if _, code := run(t, "build", "--pool", "../../testdata/sample-pool.parquet", "-o", one, "--run-dir", filepath.Join(dir, "one"),
		"--stages", static, "--target", "20", "--seed", "3"); code != 0 {
		t.Fatalf("single build exit %d", code)
	}
	var dirs []string
	for i := range 2 {
		d := filepath.Join(dir, fmt.Sprintf("s%d", i))
		if _, code := run(t, "build", "--pool", "../../testdata/sample-pool.parquet", "-o", d+".parquet", "--run-dir", d,
			"--stages", static, "--shard", fmt.Sprintf("%d/2", i)); code != 0 {
			t.Fatalf("shard %d exit %d", i, code)
		}
		dirs = append(dirs, d)
	}
	merged := filepath.Join(dir, "merged.parquet")
	stdout, code := run(t, append(append([]string{"merge"}, dirs...), "--run-dir", filepath.Join(dir, "merged"), "-o", merged, "--target", "20", "--seed", "3")...)
	if code != 0 || !strings.Contains(stdout, "60 tasks in, 20 kept") {
		t.Fatalf("merge exit %d", code)
	}
	if a, b := readOutputPaths(t, one), readOutputPaths(t, merged); !slices.Equal(a, b) {
		t.Errorf("kept paths differ:\none run %v\nmerged  %v", a, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "merged", "report.html")); err != nil {
		t.Error(err)
	}
	if _, code := run(t, "build", "--pool", "x", "-o", "y", "--run-dir", dir, "--shard", "2/2"); code != exitUsage {
		t.Errorf("--shard 2/2: exit %d, want usage", code)
	}
}
