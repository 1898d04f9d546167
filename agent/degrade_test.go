package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/policy/openai"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/sandboxtest"
	"github.com/otcurate/otcurate/trial"
)

// flakyServer is an OpenAI-compatible chat endpoint that fails often: a
// third of the requests get 503, a third hang past the client's timeout,
// the rest get a valid chat.completion whose content solves the task.
func flakyServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found","type":"not_found"}}`, http.StatusNotFound)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		switch n.Add(1) % 3 {
		case 0:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
			return
		case 1:
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		content := reply(true, "echo ok > /app/out.txt\n", 1.0)
		resp := map[string]any{
			"id": "chatcmpl-" + strconv.FormatInt(n.Load(), 10), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestManyRolloutsAgainstFailingEndpoint runs concurrent rollouts (100
// unless -short) against an endpoint that fails two thirds of the time:
// nothing crashes, no sandbox is left, and every rollout ends either
// scored by the verifier or as policy_unavailable — an infrastructure
// outcome — never as a reward 0 blamed on the agent.
func TestManyRolloutsAgainstFailingEndpoint(t *testing.T) {
	d, runID := sandboxtest.Backend(t, "test-agent-")
	n := 100
	if testing.Short() || os.Getenv("OTCURATE_ROLLOUTS") != "" {
		n, _ = strconv.Atoi(os.Getenv("OTCURATE_ROLLOUTS"))
		n = max(n, 10)
	}
	srv, requests := flakyServer(t)
	client, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "m", Concurrency: 32, MaxRetries: 1,
		BackoffInitial: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tk := task(t, "Write ok to /app/out.txt.\n")
	r := &trial.Runner{Backend: d}
	labels := map[string]string{sandbox.LabelRun: runID}
	var wg sync.WaitGroup
	results := make([]agent.Attempt, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := &agent.Harness{Policy: client, Session: "s" + strconv.Itoa(i), Config: agent.Config{MaxTurns: 4}}
			a, err := agent.RunAttempt(context.Background(), r, tk, h, labels)
			if err != nil {
				t.Errorf("rollout %d: %v", i, err)
			}
			results[i] = a
		}()
	}
	wg.Wait()
	counts := map[string]int{}
	for i, a := range results {
		key := string(a.Result.Outcome)
		if a.Result.Outcome == trial.Scored {
			key += "=" + strconv.FormatFloat(a.Reward(), 'g', -1, 64)
		}
		counts[key]++
		switch {
		case a.Result.Outcome == trial.PolicyUnavailable:
			if a.Result.Reward != nil {
				t.Errorf("rollout %d: policy_unavailable with a reward", i)
			}
		case a.Result.Outcome == trial.Scored && a.Reward() == 1:
		case a.Result.Outcome == trial.Scored && a.Trajectory != nil && a.Trajectory.End == agent.MaxTurns:
			// Successful replies that never got their confirmation through.
		default:
			t.Errorf("rollout %d: %s reward %v end %v: %s", i, a.Result.Outcome, a.Result.Reward, a.Trajectory.End, a.Result.Detail)
		}
	}
	t.Logf("%d rollouts in %s, %d requests to the endpoint: %v", n, time.Since(start).Round(time.Millisecond), requests.Load(), counts)
	if counts[string(trial.PolicyUnavailable)] == 0 || counts["scored=1"] == 0 {
		t.Errorf("expected both failures and successes: %v", counts)
	}
}
