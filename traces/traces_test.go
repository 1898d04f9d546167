package traces_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/traces"
	"github.com/otcurate/otcurate/trial"
)

// teacher solves tasks whose instruction names a word to write to
// /app/out.txt, except the one that asks for "never".
type teacher struct{}

func (teacher) Name() string { return "teacher" }

func (teacher) Complete(ctx context.Context, req policy.Request) (policy.Completion, error) {
	word := strings.Fields(req.Messages[0].Content[strings.Index(req.Messages[0].Content, "Task Description:\n")+18:])[1]
	cmd := "echo " + word + " > /app/out.txt\n"
	if word == "never" {
		cmd = "true\n"
	}
	b, _ := json.Marshal(map[string]any{"analysis": "a", "plan": "p", "task_complete": true,
		"commands": []map[string]any{{"keystrokes": cmd, "duration": 1}}})
	return policy.Completion{Content: string(b), Model: "teacher-v1"}, nil
}

func task(t *testing.T, word string) []byte {
	testSh := "#!/bin/bash\n[ \"$(cat /app/out.txt 2>/dev/null)\" = " + word + " ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
	var buf bytes.Buffer
	err := bundle.Encode(&buf, []bundle.Entry{
		{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("Write " + word + " to /app/out.txt.\n")},
		{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("version = \"1.0\"\n")},
		{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian:bookworm\nWORKDIR /app\n")},
		{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(testSh)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// export runs the teacher over a pool of three tasks (alpha, never,
// gamma; with broken, a row that is not a gzip) and writes out.
func export(t *testing.T, d sandbox.Backend, runID, out string, broken bool) (traces.Stats, error) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "tasks.parquet")
	w, _ := pool.Create(name, pool.WriterOptions{})
	for _, word := range []string{"alpha", "never", "gamma"} {
		w.Write("t-"+word, task(t, word))
	}
	if broken {
		w.Write("t-broken", []byte("not a gzip"))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, _ := pool.Open(name)
	return traces.Export(context.Background(), traces.Options{Source: src, Runner: &trial.Runner{Backend: d}, Policy: teacher{},
		Labels: map[string]string{sandbox.LabelRun: runID}, Output: out, Attempts: 2, Harness: agent.Config{MaxTurns: 4}})
}

// TestExportReadsBackInDuckDB exports the solved trajectories of three
// tasks (one unsolvable) and reads the SFT file back with DuckDB.
func TestExportReadsBackInDuckDB(t *testing.T) {
	d, runID := sandboxtest.Backend(t, "test-traces-")
	out := filepath.Join(t.TempDir(), "sft.parquet")
	st, err := export(t, d, runID, out, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", st)
	if st.Tasks != 4 || st.Unloadable != 1 || st.Exported != 2 || st.Attempts != 4 || st.TasksWithRow != 2 {
		t.Errorf("stats %+v: want 4 tasks, 1 unloadable, 2 exported from 4 attempts (1 + 2 on the unsolvable one + 1)", st)
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT task, reward, model, len(conversations), conversations[1].role, conversations[len(conversations)].role,
		conversations[2].content FROM read_parquet(?) ORDER BY task`, out)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var task, model, first, last, reply string
		var reward float64
		var n int
		if err := rows.Scan(&task, &reward, &model, &n, &first, &last, &reply); err != nil {
			t.Fatal(err)
		}
		got = append(got, task)
		if reward != 1 || model != "teacher-v1" || n != 4 || first != "user" || last != "assistant" || !strings.Contains(reply, "keystrokes") {
			t.Errorf("%s: reward %g model %q, %d messages from %s to %s, reply %q", task, reward, model, n, first, last, reply)
		}
	}
	if strings.Join(got, ",") != "t-alpha,t-gamma" {
		t.Errorf("exported %v", got)
	}
}

// TestExportJSONL writes the same rows as JSON Lines when the output's
// name ends in .jsonl (for trainers without a parquet reader), and they
// agree with DuckDB's reading of the parquet export of the same run.
func TestExportJSONL(t *testing.T) {
	d, runID := sandboxtest.Backend(t, "test-traces-")
	out := filepath.Join(t.TempDir(), "sft.jsonl")
	st, err := export(t, d, runID, out, false)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r traces.Row
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if r.Reward != 1 || len(r.Conversations) != 4 || r.Conversations[0].Role != "user" ||
			r.Conversations[3].Role != "assistant" || !strings.Contains(r.Conversations[1].Content, "keystrokes") {
			t.Errorf("row %+v", r)
		}
		got = append(got, r.Task)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != "t-alpha,t-gamma" || st.Exported != 2 {
		t.Errorf("exported %v (stats %+v)", got, st)
	}
	if strings.Contains(string(data), `"Role"`) {
		t.Errorf("jsonl keys are Go field names, not the schema's: %.200s", data)
	}
}
