package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/otcurate/otcurate/policy"
)

const (
	testKey   = "sk-test"
	testModel = "qwen3-8b"
)

// handlerFunc answers call number n (1-based) of a fake server whose
// protocol checks have already passed.
type handlerFunc func(n int, w http.ResponseWriter, r *http.Request, body map[string]any)

// fakeServer is an in-process OpenAI-compatible (vLLM-flavoured) server.
// It validates every request like a real server would and records what it
// received.
type fakeServer struct {
	t      *testing.T
	srv    *httptest.Server
	key    string // expected API key, "" = no Authorization expected
	handle handlerFunc

	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	times   []time.Time

	calls       atomic.Int32
	inflight    atomic.Int32
	maxInflight atomic.Int32
}

func newFakeServer(t *testing.T, key string, h handlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, key: key, handle: h}
	if f.handle == nil {
		f.handle = replyWith(defaultReply())
	}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) baseURL() string { return f.srv.URL + "/v1" }

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cur := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		old := f.maxInflight.Load()
		if cur <= old || f.maxInflight.CompareAndSwap(old, cur) {
			break
		}
	}
	n := int(f.calls.Add(1))

	if r.Method != http.MethodPost {
		f.t.Errorf("method = %s, want POST", r.Method)
		writeError(w, http.StatusMethodNotAllowed, "method not allowed", "")
		return
	}
	if r.URL.Path != "/v1/chat/completions" {
		f.t.Errorf("path = %q, want /v1/chat/completions", r.URL.Path)
		writeError(w, http.StatusNotFound, "not found", "")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("Content-Type = %q", ct)
	}
	want := ""
	if f.key != "" {
		want = "Bearer " + f.key
	}
	if got := r.Header.Get("Authorization"); got != want {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided", "invalid_api_key")
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("read body: %v", err)
		return
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("request body is not JSON: %v: %s", err, raw)
		writeError(w, http.StatusBadRequest, "invalid JSON", "")
		return
	}
	if msg := validateBody(body); msg != "" {
		f.t.Errorf("invalid request body: %s: %s", msg, raw)
		writeError(w, http.StatusBadRequest, msg, "")
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.times = append(f.times, time.Now())
	f.mu.Unlock()
	f.handle(n, w, r, body)
}

// validateBody checks the fields every chat-completions request must have.
func validateBody(b map[string]any) string {
	if b["model"] != testModel {
		return fmt.Sprintf("model = %v", b["model"])
	}
	msgs, ok := b["messages"].([]any)
	if !ok || len(msgs) == 0 {
		return "messages missing"
	}
	for _, m := range msgs {
		mm, ok := m.(map[string]any)
		if !ok {
			return "message is not an object"
		}
		if _, ok := mm["role"].(string); !ok {
			return "message without role"
		}
		if _, ok := mm["content"].(string); !ok {
			return "message without content"
		}
	}
	if n, ok := b["n"].(float64); !ok || n != 1 {
		return "n must be 1"
	}
	if _, ok := b["temperature"].(float64); !ok {
		return "temperature missing"
	}
	return ""
}

func (f *fakeServer) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

func (f *fakeServer) header(i int) http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, msg, code string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": http.StatusText(status), "param": nil, "code": c,
	}})
}

// reply describes a completion the fake server produces.
type reply struct {
	content   *string // nil: JSON null
	reasoning *string
	tokens    []string
	ids       []int
	logprobs  []float64
	promptIDs []int
	finish    string
	noUsage   bool
	model     string
}

func strp(s string) *string { return &s }

func defaultReply() reply {
	return reply{
		content:   strp(`{"analysis":"a","plan":"p","commands":[]}`),
		tokens:    []string{`{"`, "analysis", `":"`, "a"},
		ids:       []int{4913, 35499, 3252, 64},
		logprobs:  []float64{-0.01, -0.5, -1.25, -2},
		promptIDs: []int{151644, 8948, 198},
		finish:    "stop",
		model:     testModel,
	}
}

// vllm renders rp the way vLLM does for the given request: logprobs only
// when asked for, token ids only with return_token_ids.
func (rp reply) vllm(req map[string]any) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil, "reasoning_content": nil, "tool_calls": []any{}}
	if rp.content != nil {
		msg["content"] = *rp.content
	}
	if rp.reasoning != nil {
		msg["reasoning_content"] = *rp.reasoning
	}
	choice := map[string]any{
		"index": 0, "message": msg, "logprobs": nil,
		"finish_reason": rp.finish, "stop_reason": nil, "token_ids": nil,
	}
	if req["logprobs"] == true && rp.logprobs != nil {
		content := make([]any, len(rp.logprobs))
		for i, lp := range rp.logprobs {
			tok := fmt.Sprintf("t%d", i)
			if i < len(rp.tokens) {
				tok = rp.tokens[i]
			}
			content[i] = map[string]any{"token": tok, "logprob": lp, "bytes": []byte(tok), "top_logprobs": []any{}}
		}
		choice["logprobs"] = map[string]any{"content": content}
	}
	out := map[string]any{
		"id":                 "chatcmpl-abc123",
		"object":             "chat.completion",
		"created":            time.Now().Unix(),
		"model":              rp.model,
		"choices":            []any{choice},
		"prompt_logprobs":    nil,
		"prompt_token_ids":   nil,
		"kv_transfer_params": nil,
	}
	if req["return_token_ids"] == true {
		choice["token_ids"] = rp.ids
		out["prompt_token_ids"] = rp.promptIDs
	}
	if !rp.noUsage {
		out["usage"] = map[string]any{
			"prompt_tokens": len(rp.promptIDs), "completion_tokens": len(rp.ids),
			"total_tokens": len(rp.promptIDs) + len(rp.ids), "prompt_tokens_details": nil,
		}
	}
	return out
}

func replyWith(rp reply) handlerFunc {
	return func(_ int, w http.ResponseWriter, _ *http.Request, body map[string]any) {
		writeJSON(w, http.StatusOK, rp.vllm(body))
	}
}

// failFirst answers the first k calls with fail and the others normally.
func failFirst(k int, fail handlerFunc) handlerFunc {
	ok := replyWith(defaultReply())
	return func(n int, w http.ResponseWriter, r *http.Request, body map[string]any) {
		if n <= k {
			fail(n, w, r, body)
			return
		}
		ok(n, w, r, body)
	}
}

func statusWith(status int, msg, code string, header ...string) handlerFunc {
	return func(_ int, w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		writeError(w, status, msg, code)
	}
}

func rawWith(status int, body string) handlerFunc {
	return func(_ int, w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// blockUntilDone holds the request until the client gives up on it.
func blockUntilDone(_ int, _ http.ResponseWriter, r *http.Request, _ map[string]any) {
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

// testConfig returns a config with tiny backoffs for srv.
func testConfig(f *fakeServer) Config {
	return Config{
		BaseURL:        f.baseURL(),
		APIKey:         testKey,
		Model:          testModel,
		MaxRetries:     3,
		BackoffInitial: time.Millisecond,
		BackoffMax:     5 * time.Millisecond,
		Timeout:        5 * time.Second,
	}
}

func mustNew(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func rolloutRequest() policy.Request {
	return policy.Request{
		Messages: []policy.Message{
			{Role: policy.RoleSystem, Content: "You are an agent."},
			{Role: policy.RoleUser, Content: "Create hello.txt"},
		},
		Sampling:  policy.Sampling{Temperature: 1},
		SessionID: "trial-7",
		Rollout:   true,
	}
}

func TestCompleteParsesRollout(t *testing.T) {
	f := newFakeServer(t, testKey, nil)
	c := mustNew(t, testConfig(f))
	got, err := c.Complete(context.Background(), rolloutRequest())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	rp := defaultReply()
	want := policy.Completion{
		Content:          *rp.content,
		FinishReason:     "stop",
		PromptTokenIDs:   rp.promptIDs,
		TokenIDs:         rp.ids,
		Logprobs:         rp.logprobs,
		PromptTokens:     len(rp.promptIDs),
		CompletionTokens: len(rp.ids),
		Model:            testModel,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("completion\n got %+v\nwant %+v", got, want)
	}
	if len(got.TokenIDs) != len(got.Logprobs) {
		t.Errorf("token ids and logprobs not aligned: %d vs %d", len(got.TokenIDs), len(got.Logprobs))
	}
	if c.Name() != "openai:"+testModel {
		t.Errorf("Name = %q", c.Name())
	}
}

func TestRequestBody(t *testing.T) {
	seed := int64(42)
	tests := []struct {
		name      string
		noKey     bool
		extra     map[string]any
		req       policy.Request
		want      map[string]any // fields that must be present with these values
		absent    []string       // fields that must be absent
		sessionID string         // expected X-Session-ID, "" = absent
	}{
		{
			name: "plain greedy",
			req:  policy.Request{Messages: []policy.Message{{Role: "user", Content: "hi"}}},
			want: map[string]any{"temperature": 0.0, "n": 1.0, "model": testModel,
				"messages": []any{map[string]any{"role": "user", "content": "hi"}}},
			absent: []string{"logprobs", "return_token_ids", "top_logprobs", "seed", "top_p", "top_k", "max_tokens"},
		},
		{
			name: "rollout with sampling, seed and session",
			req: policy.Request{
				Messages:  []policy.Message{{Role: "user", Content: "hi"}},
				Sampling:  policy.Sampling{Temperature: 0.7, TopP: 0.95, TopK: 20, MaxTokens: 512, Seed: &seed},
				SessionID: "sess-1",
				Rollout:   true,
			},
			want: map[string]any{"temperature": 0.7, "top_p": 0.95, "top_k": 20.0, "max_tokens": 512.0,
				"seed": float64(RequestSeed(42, "sess-1", 1)), "logprobs": true, "return_token_ids": true},
			absent:    []string{"max_completion_tokens"},
			sessionID: "sess-1",
		},
		{
			name:   "no api key",
			noKey:  true,
			req:    policy.Request{Messages: []policy.Message{{Role: "user", Content: "hi"}}},
			want:   map[string]any{"model": testModel},
			absent: []string{"logprobs"},
		},
		{
			name:  "extra body gives defaults, request fields win",
			extra: map[string]any{"cache_salt": "v3", "top_k": 5, "temperature": 9, "chat_template_kwargs": map[string]any{"enable_thinking": false}},
			req: policy.Request{
				Messages: []policy.Message{{Role: "user", Content: "hi"}},
				Sampling: policy.Sampling{Temperature: 0.5},
			},
			want: map[string]any{"cache_salt": "v3", "top_k": 5.0, "temperature": 0.5,
				"chat_template_kwargs": map[string]any{"enable_thinking": false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := testKey
			if tt.noKey {
				key = ""
			}
			f := newFakeServer(t, key, nil)
			cfg := testConfig(f)
			cfg.APIKey = key
			cfg.ExtraBody = tt.extra
			c := mustNew(t, cfg)
			if _, err := c.Complete(context.Background(), tt.req); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			body := f.body(0)
			for k, v := range tt.want {
				if !reflect.DeepEqual(body[k], v) {
					t.Errorf("body[%q] = %#v, want %#v", k, body[k], v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := body[k]; ok {
					t.Errorf("body has %q = %#v, want absent", k, body[k])
				}
			}
			h := f.header(0)
			if got := h.Get("X-Session-ID"); got != tt.sessionID {
				t.Errorf("X-Session-ID = %q, want %q", got, tt.sessionID)
			}
			if _, ok := h["X-Session-Id"]; !ok && tt.sessionID != "" {
				t.Errorf("X-Session-ID header missing")
			}
		})
	}
}

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name        string
		key         string // key the client sends; default testKey
		handle      handlerFunc
		wantCalls   int
		wantErr     bool
		unavailable bool
		wantStatus  int // of *policy.Unavailable or *APIError
		ctxLen      bool
	}{
		{name: "500 twice then success", handle: failFirst(2, statusWith(500, "engine error", "")), wantCalls: 3},
		{name: "502 504 then success", handle: failFirst(2, func(n int, w http.ResponseWriter, r *http.Request, b map[string]any) {
			statusWith([]int{502, 504}[n-1], "bad gateway", "")(n, w, r, b)
		}), wantCalls: 3},
		{name: "429 then success", handle: failFirst(1, statusWith(429, "rate limited", "", "Retry-After", "0")), wantCalls: 2},
		{name: "persistent 503", handle: statusWith(503, "overloaded", ""), wantCalls: 4, wantErr: true, unavailable: true, wantStatus: 503},
		{name: "malformed JSON", handle: rawWith(200, `{"id":"x","choices":[`), wantCalls: 4, wantErr: true, unavailable: true, wantStatus: 200},
		{name: "malformed then success", handle: failFirst(1, rawWith(200, `<html>proxy</html>`)), wantCalls: 2},
		{name: "no choices", handle: rawWith(200, `{"id":"x","object":"chat.completion","choices":[]}`), wantCalls: 4, wantErr: true, unavailable: true, wantStatus: 200},
		{name: "501 not retried but unavailable", handle: statusWith(501, "not implemented", ""), wantCalls: 1, wantErr: true, unavailable: true, wantStatus: 501},
		{name: "400 context length (vLLM flat)", handle: rawWith(400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError","param":null,"code":400}`),
			wantCalls: 1, wantErr: true, wantStatus: 400, ctxLen: true},
		{name: "400 context length (OpenAI code)", handle: statusWith(400, "Too many tokens.", "context_length_exceeded"), wantCalls: 1, wantErr: true, wantStatus: 400, ctxLen: true},
		{name: "400 prompt is too long", handle: statusWith(400, "prompt is too long: 210000 tokens > 200000 maximum", "invalid_request_error"), wantCalls: 1, wantErr: true, wantStatus: 400, ctxLen: true},
		{name: "400 other", handle: statusWith(400, "temperature must be non-negative", ""), wantCalls: 1, wantErr: true, wantStatus: 400},
		{name: "401 wrong key", key: "sk-wrong", wantCalls: 1, wantErr: true, wantStatus: 401},
		{name: "403", handle: statusWith(403, "forbidden", ""), wantCalls: 1, wantErr: true, wantStatus: 403},
		{name: "404 model", handle: statusWith(404, "The model `x` does not exist.", "model_not_found"), wantCalls: 1, wantErr: true, wantStatus: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, testKey, tt.handle)
			cfg := testConfig(f)
			if tt.key != "" {
				cfg.APIKey = tt.key
			}
			c := mustNew(t, cfg)
			got, err := c.Complete(context.Background(), rolloutRequest())
			if calls := int(f.calls.Load()); calls != tt.wantCalls {
				t.Errorf("server calls = %d, want %d", calls, tt.wantCalls)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if got.Content == "" || len(got.TokenIDs) == 0 {
					t.Errorf("empty completion: %+v", got)
				}
				return
			}
			if err == nil {
				t.Fatalf("Complete succeeded, want error")
			}
			t.Logf("error: %v", err)
			if errors.Is(err, policy.ErrContextLength) != tt.ctxLen {
				t.Errorf("errors.Is(err, ErrContextLength) = %v, want %v", !tt.ctxLen, tt.ctxLen)
			}
			var u *policy.Unavailable
			if errors.As(err, &u) != tt.unavailable {
				t.Fatalf("IsUnavailable = %v, want %v (err %v)", !tt.unavailable, tt.unavailable, err)
			}
			if u != nil {
				if u.Attempts != tt.wantCalls {
					t.Errorf("Unavailable.Attempts = %d, want %d", u.Attempts, tt.wantCalls)
				}
				if u.Status != tt.wantStatus {
					t.Errorf("Unavailable.Status = %d, want %d", u.Status, tt.wantStatus)
				}
				return
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v does not wrap *APIError", err)
			}
			if apiErr.Status != tt.wantStatus {
				t.Errorf("APIError.Status = %d, want %d", apiErr.Status, tt.wantStatus)
			}
		})
	}
}

func TestRetryAfterHonouredAndCapped(t *testing.T) {
	f := newFakeServer(t, testKey, failFirst(1, statusWith(429, "slow down", "rate_limit_exceeded", "Retry-After", "1")))
	cfg := testConfig(f)
	cfg.BackoffMax = 80 * time.Millisecond // caps the 1 s Retry-After
	c := mustNew(t, cfg)
	if _, err := c.Complete(context.Background(), rolloutRequest()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("calls = %d, want 2", n)
	}
	f.mu.Lock()
	gap := f.times[1].Sub(f.times[0])
	f.mu.Unlock()
	// Exponential backoff alone would wait ~1 ms; Retry-After capped by
	// BackoffMax waits 80 ms.
	if gap < 70*time.Millisecond || gap > 800*time.Millisecond {
		t.Errorf("gap between attempts = %s, want about 80ms", gap)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1"
	srv.Close()
	c := mustNew(t, Config{BaseURL: base, Model: testModel, MaxRetries: 2,
		BackoffInitial: time.Millisecond, BackoffMax: 2 * time.Millisecond})
	_, err := c.Complete(context.Background(), rolloutRequest())
	var u *policy.Unavailable
	if !errors.As(err, &u) {
		t.Fatalf("err = %v, want *policy.Unavailable", err)
	}
	if u.Attempts != 3 || u.Status != 0 {
		t.Errorf("Unavailable = %+v, want 3 attempts, status 0", u)
	}
}

func TestSlowResponseTimesOut(t *testing.T) {
	t.Run("always slow", func(t *testing.T) {
		f := newFakeServer(t, testKey, blockUntilDone)
		cfg := testConfig(f)
		cfg.Timeout = 40 * time.Millisecond
		cfg.MaxRetries = 2
		c := mustNew(t, cfg)
		start := time.Now()
		_, err := c.Complete(context.Background(), rolloutRequest())
		var u *policy.Unavailable
		if !errors.As(err, &u) {
			t.Fatalf("err = %v, want *policy.Unavailable", err)
		}
		if u.Attempts != 3 || f.calls.Load() != 3 {
			t.Errorf("attempts = %d, calls = %d, want 3", u.Attempts, f.calls.Load())
		}
		if !strings.Contains(err.Error(), "timed out") {
			t.Errorf("error does not mention the timeout: %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("took %s", d)
		}
	})
	t.Run("slow once", func(t *testing.T) {
		f := newFakeServer(t, testKey, failFirst(1, blockUntilDone))
		cfg := testConfig(f)
		cfg.Timeout = 40 * time.Millisecond
		c := mustNew(t, cfg)
		if _, err := c.Complete(context.Background(), rolloutRequest()); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if n := f.calls.Load(); n != 2 {
			t.Errorf("calls = %d, want 2", n)
		}
	})
}

func TestContextCancellation(t *testing.T) {
	tests := []struct {
		name    string
		handle  handlerFunc
		cfg     func(*Config)
		wantErr error
		timeout bool // use a deadline instead of cancel
	}{
		{name: "during slow response", handle: blockUntilDone, wantErr: context.Canceled},
		{name: "deadline during slow response", handle: blockUntilDone, wantErr: context.DeadlineExceeded, timeout: true},
		{name: "during backoff sleep", handle: statusWith(503, "overloaded", "", "Retry-After", "30"),
			cfg: func(c *Config) { c.BackoffMax = 30 * time.Second }, wantErr: context.Canceled},
		{name: "deadline during backoff sleep", handle: statusWith(500, "boom", ""),
			cfg: func(c *Config) { c.BackoffInitial, c.BackoffMax = 10*time.Second, 10*time.Second }, wantErr: context.DeadlineExceeded, timeout: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, testKey, tt.handle)
			cfg := testConfig(f)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			c := mustNew(t, cfg)
			var ctx context.Context
			var cancel context.CancelFunc
			if tt.timeout {
				ctx, cancel = context.WithTimeout(context.Background(), 40*time.Millisecond)
			} else {
				ctx, cancel = context.WithCancel(context.Background())
				time.AfterFunc(40*time.Millisecond, cancel)
			}
			defer cancel()
			start := time.Now()
			_, err := c.Complete(ctx, rolloutRequest())
			if err != tt.wantErr {
				t.Errorf("err = %v, want exactly %v", err, tt.wantErr)
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Errorf("Complete returned after %s, want promptly after cancellation", d)
			}
			if n := f.calls.Load(); n != 1 {
				t.Errorf("calls = %d, want 1", n)
			}
		})
	}
	t.Run("already cancelled", func(t *testing.T) {
		f := newFakeServer(t, testKey, nil)
		c := mustNew(t, testConfig(f))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Complete(ctx, rolloutRequest()); err != context.Canceled {
			t.Errorf("err = %v", err)
		}
		if f.calls.Load() != 0 {
			t.Errorf("request sent with a cancelled context")
		}
	})
}

func TestConcurrencyLimit(t *testing.T) {
	slow := func(n int, w http.ResponseWriter, r *http.Request, b map[string]any) {
		time.Sleep(15 * time.Millisecond)
		replyWith(defaultReply())(n, w, r, b)
	}
	f := newFakeServer(t, testKey, slow)
	cfg := testConfig(f)
	cfg.Concurrency = 3
	c := mustNew(t, cfg)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			if _, err := c.Complete(context.Background(), rolloutRequest()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Complete: %v", err)
	}
	if got := f.calls.Load(); got != 20 {
		t.Errorf("calls = %d, want 20", got)
	}
	if m := f.maxInflight.Load(); m > 3 {
		t.Errorf("max in-flight = %d, want <= 3", m)
	} else if m < 2 {
		t.Errorf("max in-flight = %d: the limit serialises more than asked", m)
	}
}

func TestSlotWaitRespectsContext(t *testing.T) {
	release := make(chan struct{})
	f := newFakeServer(t, testKey, func(n int, w http.ResponseWriter, r *http.Request, b map[string]any) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		replyWith(defaultReply())(n, w, r, b)
	})
	cfg := testConfig(f)
	cfg.Concurrency = 1
	c := mustNew(t, cfg)
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(context.Background(), rolloutRequest())
		done <- err
	}()
	for f.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.Complete(ctx, rolloutRequest()); err != context.DeadlineExceeded {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("waited %s for a slot", d)
	}
	close(release)
	if err := <-done; err != nil {
		t.Errorf("first Complete: %v", err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("calls = %d, want 1", n)
	}
}

func TestResponseVariants(t *testing.T) {
	tests := []struct {
		name        string
		rp          func(*reply)
		handle      handlerFunc // overrides rp
		rollout     bool
		check       func(t *testing.T, c policy.Completion)
		unavailable bool
	}{
		{
			name:    "not a rollout: no ids, no logprobs",
			rollout: false,
			check: func(t *testing.T, c policy.Completion) {
				if c.TokenIDs != nil || c.Logprobs != nil || c.PromptTokenIDs != nil {
					t.Errorf("unexpected rollout details: %+v", c)
				}
				if c.Content == "" || c.FinishReason != "stop" {
					t.Errorf("completion = %+v", c)
				}
			},
		},
		{
			name:    "logprobs without token ids",
			rollout: true,
			handle: func(_ int, w http.ResponseWriter, _ *http.Request, b map[string]any) {
				b["return_token_ids"] = false // a server that ignores return_token_ids
				writeJSON(w, 200, defaultReply().vllm(b))
			},
			check: func(t *testing.T, c policy.Completion) {
				if c.TokenIDs != nil || c.PromptTokenIDs != nil {
					t.Errorf("token ids = %v / %v, want none", c.TokenIDs, c.PromptTokenIDs)
				}
				if !reflect.DeepEqual(c.Logprobs, defaultReply().logprobs) {
					t.Errorf("logprobs = %v", c.Logprobs)
				}
			},
		},
		{
			name:    "token ids recovered from token_id:N tokens",
			rollout: true,
			handle: func(_ int, w http.ResponseWriter, _ *http.Request, b map[string]any) {
				rp := defaultReply()
				rp.tokens = []string{"token_id:4913", "token_id:35499", "token_id:3252", "token_id:64"}
				b["return_token_ids"] = false
				writeJSON(w, 200, rp.vllm(b))
			},
			check: func(t *testing.T, c policy.Completion) {
				if !reflect.DeepEqual(c.TokenIDs, defaultReply().ids) {
					t.Errorf("token ids = %v", c.TokenIDs)
				}
			},
		},
		{
			name:    "null content with reasoning_content",
			rollout: true,
			rp: func(r *reply) {
				r.content = nil
				r.reasoning = strp("Let me think about the task at length...")
				r.finish = "length"
			},
			check: func(t *testing.T, c policy.Completion) {
				if c.Content != "" || c.FinishReason != "length" {
					t.Errorf("content %q finish %q", c.Content, c.FinishReason)
				}
				if len(c.TokenIDs) != 4 || len(c.Logprobs) != 4 {
					t.Errorf("ids %v logprobs %v", c.TokenIDs, c.Logprobs)
				}
			},
		},
		{
			name:    "no usage and no model",
			rollout: true,
			rp:      func(r *reply) { r.noUsage = true; r.model = "" },
			check: func(t *testing.T, c policy.Completion) {
				if c.PromptTokens != 0 || c.CompletionTokens != 0 {
					t.Errorf("usage = %d/%d", c.PromptTokens, c.CompletionTokens)
				}
				if c.Model != testModel {
					t.Errorf("model = %q, want the configured one", c.Model)
				}
			},
		},
		{
			name:        "token ids and logprobs misaligned",
			rollout:     true,
			rp:          func(r *reply) { r.ids = r.ids[:3] },
			unavailable: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.handle
			if h == nil {
				rp := defaultReply()
				if tt.rp != nil {
					tt.rp(&rp)
				}
				h = replyWith(rp)
			}
			f := newFakeServer(t, testKey, h)
			c := mustNew(t, testConfig(f))
			req := rolloutRequest()
			req.Rollout = tt.rollout
			got, err := c.Complete(context.Background(), req)
			if tt.unavailable {
				if !policy.IsUnavailable(err) {
					t.Fatalf("err = %v, want *policy.Unavailable", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			tt.check(t, got)
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantErr  string
		endpoint string
	}{
		{name: "ok", cfg: Config{BaseURL: "http://host:8000/v1", Model: "m"}, endpoint: "http://host:8000/v1/chat/completions"},
		{name: "trailing slash", cfg: Config{BaseURL: "https://api.example.com/v1/", Model: "m"}, endpoint: "https://api.example.com/v1/chat/completions"},
		{name: "empty base", cfg: Config{Model: "m"}, wantErr: "BaseURL is required"},
		{name: "bad scheme", cfg: Config{BaseURL: "ftp://host/v1", Model: "m"}, wantErr: "scheme"},
		{name: "no scheme", cfg: Config{BaseURL: "host:8000/v1", Model: "m"}, wantErr: "invalid BaseURL"},
		{name: "no host", cfg: Config{BaseURL: "http:///v1", Model: "m"}, wantErr: "no host"},
		{name: "query", cfg: Config{BaseURL: "http://host/v1?x=1", Model: "m"}, wantErr: "query"},
		{name: "no model", cfg: Config{BaseURL: "http://host/v1"}, wantErr: "Model is required"},
		{name: "negative backoff", cfg: Config{BaseURL: "http://host/v1", Model: "m", BackoffMax: -1}, wantErr: "negative backoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if c.endpoint != tt.endpoint {
				t.Errorf("endpoint = %q, want %q", c.endpoint, tt.endpoint)
			}
			if cap(c.sem) != DefaultConcurrency || c.maxRetries != DefaultMaxRetries ||
				c.backoffInitial != DefaultBackoffInitial || c.backoffMax != DefaultBackoffMax ||
				c.timeout != DefaultTimeout || c.http == nil {
				t.Errorf("defaults not applied: %+v", c)
			}
		})
	}
	t.Run("negative means none", func(t *testing.T) {
		c := mustNew(t, Config{BaseURL: "http://h/v1", Model: "m", Concurrency: -1, MaxRetries: -1, Timeout: -1})
		if c.sem != nil || c.maxRetries != 0 || c.timeout > 0 {
			t.Errorf("got sem %v retries %d timeout %s", c.sem, c.maxRetries, c.timeout)
		}
	})
	t.Run("extra body copied", func(t *testing.T) {
		extra := map[string]any{"cache_salt": "a"}
		c := mustNew(t, Config{BaseURL: "http://h/v1", Model: "m", ExtraBody: extra})
		extra["cache_salt"] = "b"
		if c.extra["cache_salt"] != "a" {
			t.Errorf("ExtraBody aliased the caller's map")
		}
	})
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvAPIKey, "sk-env")
	t.Setenv(EnvBaseURL, "http://env:8000/v1")
	got := ConfigFromEnv(Config{Model: "m"})
	if got.APIKey != "sk-env" || got.BaseURL != "http://env:8000/v1" || got.Model != "m" {
		t.Errorf("ConfigFromEnv = %+v", got)
	}
	got = ConfigFromEnv(Config{APIKey: "sk-set", BaseURL: "http://set/v1"})
	if got.APIKey != "sk-set" || got.BaseURL != "http://set/v1" {
		t.Errorf("explicit fields overridden: %+v", got)
	}
}

func TestBackoff(t *testing.T) {
	c := &Client{backoffInitial: 100 * time.Millisecond, backoffMax: time.Second}
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 60: time.Second} {
		for range 50 {
			if d := c.delay(n, -1); d < want/2 || d > want {
				t.Fatalf("delay(%d) = %s, want in [%s, %s]", n, d, want/2, want)
			}
		}
	}
	if d := c.delay(1, 3*time.Second); d != time.Second {
		t.Errorf("Retry-After not capped: %s", d)
	}
	if d := c.delay(3, 0); d != 0 {
		t.Errorf("Retry-After 0: %s", d)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              -1,
		"7":                             7 * time.Second,
		"1.5":                           1500 * time.Millisecond,
		"-3":                            -1,
		"soon":                          -1,
		"Fri, 02 Jan 2026 03:04:15 GMT": 10 * time.Second,
		"Fri, 02 Jan 2026 03:04:00 GMT": 0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

// TestRequestSeedPerSession: the samples of an RL group share the run's
// seed, so the seed a server gets must differ per session and turn (or a
// seeded server draws the same reply for each of them), stay the same for
// a replay, and be the caller's own when there is no session.
func TestRequestSeedPerSession(t *testing.T) {
	if got := RequestSeed(42, "", 3); got != 42 {
		t.Errorf("no session: seed %d, want 42", got)
	}
	seen := map[int64]string{}
	for _, sess := range []string{"train/1/t/0", "train/1/t/1", "train/1/t/2", "train/2/t/0"} {
		for turn := 1; turn <= 5; turn += 2 {
			s := RequestSeed(42, sess, turn)
			key := fmt.Sprintf("%s@%d", sess, turn)
			if other, dup := seen[s]; dup {
				t.Errorf("%s and %s get the same seed %d", key, other, s)
			}
			seen[s] = key
			if s < 0 || s >= 1<<62 {
				t.Errorf("%s: seed %d out of range", key, s)
			}
			if again := RequestSeed(42, sess, turn); again != s {
				t.Errorf("%s: seed %d, then %d", key, s, again)
			}
		}
	}
	if RequestSeed(42, "s", 1) == RequestSeed(43, "s", 1) {
		t.Error("the run's seed does not change the request's")
	}
}
