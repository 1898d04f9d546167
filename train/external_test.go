package train_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/policy/openai"
	"github.com/otcurate/otcurate/pool"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/train"
	"github.com/otcurate/otcurate/trial"
)

// vllm is an in-process stand-in for a vLLM OpenAI server: chat
// completions with token ids and log-probabilities, and runtime LoRA
// loading. Half the sessions (by hash) solve the task.
type vllm struct {
	noTokenIDs bool // an older server: return_token_ids is ignored
	mu         sync.Mutex
	models     map[string]int // requests per model name
	loras      []string
}

func (v *vllm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/load_lora_adapter":
		var req struct{ LoraName, LoraPath string }
		var raw map[string]string
		json.NewDecoder(r.Body).Decode(&raw)
		req.LoraName, req.LoraPath = raw["lora_name"], raw["lora_path"]
		if req.LoraName == "" || req.LoraPath == "" {
			http.Error(w, `{"error":{"message":"lora_name and lora_path required"}}`, 400)
			return
		}
		v.mu.Lock()
		v.loras = append(v.loras, req.LoraName)
		v.mu.Unlock()
		w.Write([]byte("Success: LoRA adapter '" + req.LoraName + "' added successfully."))
		return
	case "/v1/chat/completions":
	default:
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model          string           `json:"model"`
		Messages       []policy.Message `json:"messages"`
		Logprobs       bool             `json:"logprobs"`
		ReturnTokenIDs bool             `json:"return_token_ids"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, 400)
		return
	}
	v.mu.Lock()
	v.models[req.Model]++
	v.mu.Unlock()
	h := fnv.New32a()
	h.Write([]byte(r.Header.Get("X-Session-ID")))
	word := "ok"
	if h.Sum32()%2 == 1 {
		word = "no"
	}
	b, _ := json.Marshal(map[string]any{"analysis": "a", "plan": "p", "task_complete": true,
		"commands": []map[string]any{{"keystrokes": "echo " + word + " > /app/out.txt\n", "duration": 1}}})
	content := string(b)
	choice := map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}
	resp := map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"usage": map[string]any{"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}
	if req.ReturnTokenIDs && !v.noTokenIDs {
		resp["prompt_token_ids"] = []int{1, 2, 3, len(req.Messages)}
		choice["token_ids"] = []int{10, 11, 12, 13, 14}
	}
	if req.Logprobs {
		var lp []map[string]any
		for i := 0; i < 5; i++ {
			lp = append(lp, map[string]any{"token": "t", "logprob": -0.5, "bytes": []int{116}, "top_logprobs": []any{}})
		}
		choice["logprobs"] = map[string]any{"content": lp}
	}
	resp["choices"] = []any{choice}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func okTask(t *testing.T) pool.Source {
	return taskPool(t, "version = \"1.0\"\n",
		"#!/bin/bash\n[ \"$(cat /app/out.txt)\" = ok ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n",
		"write-ok", "write-ok-2")
}

// taskPool is a pool of copies of one task ("write ok to /app/out.txt",
// with taskToml and testSh), under names.
func taskPool(t *testing.T, taskToml, testSh string, names ...string) pool.Source {
	t.Helper()
	var buf bytes.Buffer
	bundle.Encode(&buf, []bundle.Entry{
		{Name: "instruction.md", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("Write ok to /app/out.txt.\n")},
		{Name: "task.toml", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(taskToml)},
		{Name: "environment/Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte("FROM debian:bookworm\nWORKDIR /app\n")},
		{Name: "tests/test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte(testSh)},
	})
	name := filepath.Join(t.TempDir(), "tasks.parquet")
	w, _ := pool.Create(name, pool.WriterOptions{})
	for _, n := range names {
		w.Write(n, buf.Bytes())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, _ := pool.Open(name)
	return src
}

// TestExternalLearnerHandshake trains a served policy for two steps with a
// file-level fake learner: experience goes out as parquet, the learner
// publishes a LoRA version, otcurate loads it into the server and samples
// the next step from it.
func TestExternalLearnerHandshake(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-train-")
	srv := &vllm{models: map[string]int{}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	client := baseClient(t, hs.URL)
	dir := t.TempDir()
	learnerDir := filepath.Join(dir, "learner")

	// The fake learner: read each step's experience, check it, publish.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rowsSeen [][]train.ExperienceRow
	learnerDone := make(chan struct{})
	go func() {
		defer close(learnerDone)
		for step := 1; step <= 2; step++ {
			ready := filepath.Join(learnerDir, "experience", "step-0000"+string(rune('0'+step))+".ready")
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			rows, err := parquet.ReadFile[train.ExperienceRow](strings.TrimSuffix(ready, ".ready") + ".parquet")
			if err != nil {
				t.Errorf("learner: %v", err)
				return
			}
			rowsSeen = append(rowsSeen, rows)
			// The JSON Lines form holds the same rows, for learners
			// without a parquet reader.
			data, err := os.ReadFile(strings.TrimSuffix(ready, ".ready") + ".jsonl")
			if err != nil {
				t.Errorf("learner: %v", err)
				return
			}
			var fromJSONL []train.ExperienceRow
			for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
				var r train.ExperienceRow
				if err := json.Unmarshal(line, &r); err != nil {
					t.Errorf("learner: jsonl line %q: %v", line, err)
					return
				}
				fromJSONL = append(fromJSONL, r)
			}
			if got, want := mustJSON(t, fromJSONL), mustJSON(t, rows); got != want {
				t.Errorf("step %d: the jsonl rows differ from the parquet rows:\n%s\n%s", step, got, want)
			}
			name := "policy-step-" + string(rune('0'+step))
			os.MkdirAll(filepath.Join(learnerDir, "policy"), 0o755)
			b, _ := json.Marshal(train.PublishedVersion{Step: step, Model: name, LoraName: name, LoraPath: "/ckpt/" + name})
			os.WriteFile(filepath.Join(learnerDir, "policy", "version.json.tmp"), b, 0o644)
			os.Rename(filepath.Join(learnerDir, "policy", "version.json.tmp"), filepath.Join(learnerDir, "policy", "version.json"))
		}
	}()

	metrics, err := trainExternal(ctx, t, d, runID, client, dir)
	if err != nil {
		t.Fatal(err)
	}
	<-learnerDone
	if len(metrics) != 2 || metrics[0].PolicyVersion != "base" || metrics[1].PolicyVersion != "policy-step-1" {
		t.Fatalf("metrics %+v", metrics)
	}
	if len(srv.loras) != 2 || srv.loras[0] != "policy-step-1" || srv.models["policy-step-1"] == 0 {
		t.Errorf("adapters loaded %v, requests per model %v", srv.loras, srv.models)
	}
	for i, rows := range rowsSeen {
		if len(rows) == 0 {
			t.Fatalf("step %d: no experience", i+1)
		}
		masked := 0
		for _, r := range rows {
			if len(r.ResponseTokenIDs) != 5 || len(r.BehaviourLogprobs) != 5 || len(r.PromptTokenIDs) == 0 || r.PromptMessages == "" {
				t.Errorf("step %d row %+v: token ids or logprobs missing", i+1, r)
			}
			if r.LossMask == 1 {
				masked++
				if r.Advantage == 0 || !r.Included {
					t.Errorf("loss_mask 1 on a row without signal: %+v", r)
				}
			}
		}
		t.Logf("step %d: %d experience rows, %d in the loss, mean reward %.2f", i+1, len(rows), masked, metrics[i].MeanReward)
		if masked == 0 {
			t.Errorf("step %d: no row carries a learning signal (the sessions split ok/no)", i+1)
		}
	}
}

// baseClient is an OpenAI client of the server at url, serving "base".
func baseClient(t *testing.T, url string) *openai.Client {
	t.Helper()
	client, err := openai.New(openai.Config{BaseURL: url + "/v1", Model: "base", MaxRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// trainExternal trains client for two steps on okTask with the external
// learner in dir/learner.
func trainExternal(ctx context.Context, t *testing.T, d sandbox.Backend, runID string, client *openai.Client, dir string) ([]train.Metrics, error) {
	return train.Run(ctx, train.Options{Data: okTask(t), Runner: &trial.Runner{Backend: d},
		Labels: map[string]string{sandbox.LabelRun: runID}, Policy: client,
		Learner:   &train.External{Dir: filepath.Join(dir, "learner"), Policy: client, Model: "base", Timeout: time.Minute, Poll: 20 * time.Millisecond},
		Harness:   agent.Config{MaxTurns: 4, Rollout: true, Sampling: policy.Sampling{Temperature: 1}},
		GroupSize: 4, BatchTasks: 2, Steps: 2, Seed: 1, Workers: 4, RunDir: filepath.Join(dir, "run"), Fingerprint: "ext"})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestExternalLearnerNeedsTokenIDs: a server that ignores return_token_ids
// stops the run at its first step with a clear error, before any learner
// waits on experience it cannot learn from.
func TestExternalLearnerNeedsTokenIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs sandboxes")
	}
	d, runID := sandboxtest.Backend(t, "test-train-")
	hs := httptest.NewServer(&vllm{models: map[string]int{}, noTokenIDs: true})
	defer hs.Close()
	client := baseClient(t, hs.URL)
	dir := t.TempDir()
	learnerDir := filepath.Join(dir, "learner")
	_, err := trainExternal(context.Background(), t, d, runID, client, dir)
	if !errors.Is(err, train.ErrNoTokenIDs) || !strings.Contains(err.Error(), "step 1") {
		t.Fatalf("train with a server returning no token ids: %v, want %v at step 1", err, train.ErrNoTokenIDs)
	}
	if _, err := os.Stat(filepath.Join(learnerDir, "experience", "step-00001.ready")); err == nil {
		t.Error("a .ready marker was written for experience without token ids")
	}
}
