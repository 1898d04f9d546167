// Package openai implements policy.Policy on top of any OpenAI-compatible
// chat-completions server (vLLM, SGLang, the OpenAI API, ...).
//
// A Client sends one POST {BaseURL}/chat/completions per attempt. For
// rollout requests (policy.Request.Rollout) it asks for behaviour
// log-probabilities (`logprobs: true`) and for the exact token ids
// (`return_token_ids: true`, a vLLM extension) and returns them aligned in
// policy.Completion. For the trainer's external learner it is also a
// model switcher: SetModel changes the served model name later requests
// use, and LoadLoRA loads a LoRA adapter into a vLLM server at run time.
//
// Errors are classified the way the harness needs them:
//
//   - context-length overflows (HTTP 400 whose message says so) wrap
//     policy.ErrContextLength and are never retried;
//   - infrastructure failures (connection errors, per-attempt timeouts,
//     HTTP 408/429/500/502/503/504, and 2xx answers that cannot be decoded
//     or carry no choice) are retried with exponential backoff and jitter,
//     honouring Retry-After on 429 and 503; when the retries are used up
//     Complete returns a *policy.Unavailable. Other 5xx statuses are also
//     reported as *policy.Unavailable, without retrying;
//   - every other non-2xx answer (401, 403, 404, a 400 that is not about
//     the context length, 422, ...) is a configuration or request error:
//     it is returned at once as an error wrapping *APIError, and is
//     neither retried nor classified as *policy.Unavailable, so a wrong
//     key or model name fails loudly instead of being excluded silently;
//   - when the caller's context ends, Complete returns ctx.Err() itself
//     (unwrapped), also while waiting for a concurrency slot or sleeping
//     between retries.
package openai

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otcurate/otcurate/policy"
)

// Defaults applied by New to zero-valued Config fields.
const (
	DefaultConcurrency    = 8
	DefaultMaxRetries     = 5
	DefaultBackoffInitial = 500 * time.Millisecond
	DefaultBackoffMax     = 30 * time.Second
	DefaultTimeout        = 10 * time.Minute
)

// Environment variables read by ConfigFromEnv.
const (
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvBaseURL = "OPENAI_BASE_URL"
)

const (
	// maxResponseBytes bounds a successful response body (prompt token ids
	// and logprobs of long contexts can reach a few MiB).
	maxResponseBytes = 256 << 20
	// maxErrorBytes bounds how much of an error body is read.
	maxErrorBytes = 64 << 10
)

// Config configures a Client. Zero values select the defaults above.
type Config struct {
	// BaseURL is the API root including the version segment, e.g.
	// "http://host:8000/v1". A trailing slash is tolerated. Required.
	BaseURL string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// Model is the served model name sent with every request. Required.
	Model string
	// Concurrency is the maximum number of HTTP requests in flight at once
	// across all goroutines using the Client (default 8; negative means no
	// limit). A slot is held for one attempt only, not during the backoff
	// sleep between attempts.
	Concurrency int
	// MaxRetries is how many times a failed attempt is retried, so at most
	// 1+MaxRetries requests are made (default 5; negative means none).
	MaxRetries int
	// BackoffInitial and BackoffMax bound the sleep between attempts: the
	// n-th retry waits a random duration in [d/2, d] with
	// d = min(BackoffInitial·2^(n-1), BackoffMax). A Retry-After header on
	// 429/503 replaces that delay, capped at BackoffMax.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// Timeout bounds each attempt, including reading the response body
	// (default 10 min; negative means no per-attempt timeout). An attempt
	// that times out is retried.
	Timeout time.Duration
	// HTTPClient is used for the requests. When nil, a client with its own
	// transport (keeping Concurrency idle connections per host) is used.
	// Its own Timeout, if any, applies in addition to Timeout.
	HTTPClient *http.Client
	// ExtraBody holds additional top-level request fields, e.g.
	// "cache_salt", "chat_template_kwargs", "min_p" or
	// "skip_special_tokens". They are defaults: fields the client sets
	// itself for a request (model, messages, n, the sampling parameters
	// present in the request, logprobs, return_token_ids) take precedence.
	// Responses are read as one JSON document, so ExtraBody must not turn
	// on "stream". New copies the map (shallowly).
	ExtraBody map[string]any
}

// ConfigFromEnv returns cfg with an empty APIKey taken from the
// OPENAI_API_KEY environment variable and an empty BaseURL taken from
// OPENAI_BASE_URL. Fields already set are kept. New never reads the
// environment itself; callers that want the conventional variables pass
// New(ConfigFromEnv(cfg)).
func ConfigFromEnv(cfg Config) Config {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv(EnvAPIKey)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv(EnvBaseURL)
	}
	return cfg
}

// Client is an OpenAI-compatible chat-completions policy. It is safe for
// concurrent use.
type Client struct {
	endpoint       string
	apiKey         string
	modelMu        sync.RWMutex
	model          string        // the served model name; SetModel changes it
	sem            chan struct{} // nil: no concurrency limit
	maxRetries     int
	backoffInitial time.Duration
	backoffMax     time.Duration
	timeout        time.Duration // <= 0: none
	http           *http.Client
	extra          map[string]any
}

var _ policy.Policy = (*Client)(nil)

// New validates cfg, applies the defaults and returns a Client.
func New(cfg Config) (*Client, error) {
	endpoint, err := endpointURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: Config.Model is required")
	}
	if cfg.BackoffInitial < 0 || cfg.BackoffMax < 0 {
		return nil, fmt.Errorf("openai: negative backoff (initial %s, max %s)", cfg.BackoffInitial, cfg.BackoffMax)
	}
	c := &Client{
		endpoint:       endpoint,
		apiKey:         cfg.APIKey,
		model:          cfg.Model,
		maxRetries:     cfg.MaxRetries,
		backoffInitial: cfg.BackoffInitial,
		backoffMax:     cfg.BackoffMax,
		timeout:        cfg.Timeout,
		http:           cfg.HTTPClient,
	}
	conc := cfg.Concurrency
	if conc == 0 {
		conc = DefaultConcurrency
	}
	if conc > 0 {
		c.sem = make(chan struct{}, conc)
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.backoffInitial == 0 {
		c.backoffInitial = DefaultBackoffInitial
	}
	if c.backoffMax == 0 {
		c.backoffMax = DefaultBackoffMax
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.http == nil {
		c.http = defaultHTTPClient(conc)
	}
	if len(cfg.ExtraBody) > 0 {
		c.extra = make(map[string]any, len(cfg.ExtraBody))
		for k, v := range cfg.ExtraBody {
			c.extra[k] = v
		}
	}
	return c, nil
}

// endpointURL validates a base URL and returns the chat-completions URL.
func endpointURL(base string) (string, error) {
	base = strings.TrimSpace(base)
	if base == "" {
		return "", errors.New("openai: Config.BaseURL is required (e.g. http://localhost:8000/v1)")
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("openai: invalid BaseURL %q: %w", base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("openai: invalid BaseURL %q: scheme must be http or https", base)
	}
	if u.Host == "" {
		return "", fmt.Errorf("openai: invalid BaseURL %q: no host", base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("openai: invalid BaseURL %q: query and fragment are not allowed", base)
	}
	return strings.TrimRight(u.String(), "/") + "/chat/completions", nil
}

func defaultHTTPClient(concurrency int) *http.Client {
	idle := concurrency
	if idle <= 0 {
		idle = 64
	}
	var rt http.RoundTripper = http.DefaultTransport
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t = t.Clone()
		t.MaxIdleConnsPerHost = max(idle, t.MaxIdleConnsPerHost)
		t.MaxIdleConns = max(idle, t.MaxIdleConns)
		rt = t
	}
	return &http.Client{Transport: rt}
}

// Name identifies the policy in records: "openai:" followed by the model.
func (c *Client) Name() string { return "openai:" + c.currentModel() }

func (c *Client) currentModel() string {
	c.modelMu.RLock()
	defer c.modelMu.RUnlock()
	return c.model
}

// SetModel switches the served model name later requests use (a new
// policy version published by a learner).
func (c *Client) SetModel(name string) {
	c.modelMu.Lock()
	defer c.modelMu.Unlock()
	c.model = name
}

// LoadLoRA asks a vLLM server to load a LoRA adapter under name
// (POST {BaseURL}/load_lora_adapter; the server needs --enable-lora and
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True). Requests then use it through
// SetModel(name).
func (c *Client) LoadLoRA(ctx context.Context, name, path string) error {
	body, _ := json.Marshal(map[string]string{"lora_name": name, "lora_path": path})
	url := strings.TrimSuffix(c.endpoint, "/chat/completions") + "/load_lora_adapter"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("load_lora_adapter: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("load_lora_adapter %s: HTTP %d: %s", name, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// APIError is a non-2xx answer of the server. Complete returns it wrapped
// (possibly inside a *policy.Unavailable or together with
// policy.ErrContextLength); use errors.As to inspect it.
type APIError struct {
	Status  int    // HTTP status code
	Message string // the error message of the body, or the raw body (truncated)
	Type    string // the error type, when the body has one
	Code    string // the error code, when the body has one
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if e.Code != "" && e.Code != strconv.Itoa(e.Status) && !strings.Contains(msg, e.Code) {
		return fmt.Sprintf("openai: HTTP %d (%s): %s", e.Status, e.Code, msg)
	}
	return fmt.Sprintf("openai: HTTP %d: %s", e.Status, msg)
}

// Complete implements policy.Policy. See the package documentation for
// the error classification.
func (c *Client) Complete(ctx context.Context, req policy.Request) (policy.Completion, error) {
	if err := ctx.Err(); err != nil {
		return policy.Completion{}, err
	}
	body, err := c.requestBody(req)
	if err != nil {
		return policy.Completion{}, err
	}
	for attempt := 1; ; attempt++ {
		r := c.attempt(ctx, body, req.SessionID)
		if r.kind == outcomeOK {
			return r.completion, nil
		}
		if err := ctx.Err(); err != nil {
			return policy.Completion{}, err
		}
		switch r.kind {
		case outcomeFatal:
			return policy.Completion{}, r.err
		case outcomeUnavailable:
			return policy.Completion{}, &policy.Unavailable{Attempts: attempt, Status: r.status, Err: r.err}
		}
		if attempt > c.maxRetries {
			return policy.Completion{}, &policy.Unavailable{Attempts: attempt, Status: r.status, Err: r.err}
		}
		if err := sleep(ctx, c.delay(attempt, r.retryAfter)); err != nil {
			return policy.Completion{}, err
		}
	}
}

// requestBody encodes the chat-completions request.
func (c *Client) requestBody(req policy.Request) ([]byte, error) {
	if len(req.Messages) == 0 {
		return nil, errors.New("openai: request has no messages")
	}
	b := make(map[string]any, len(c.extra)+10)
	for k, v := range c.extra {
		b[k] = v
	}
	s := req.Sampling
	b["model"] = c.currentModel()
	b["messages"] = req.Messages
	b["n"] = 1
	b["temperature"] = s.Temperature
	if s.TopP != 0 {
		b["top_p"] = s.TopP
	}
	if s.TopK != 0 {
		b["top_k"] = s.TopK
	}
	if s.MaxTokens != 0 {
		b["max_tokens"] = s.MaxTokens
	}
	if s.Seed != nil {
		b["seed"] = RequestSeed(*s.Seed, req.SessionID, len(req.Messages))
	}
	if req.Rollout {
		b["logprobs"] = true
		b["return_token_ids"] = true
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("openai: encode request: %w", err)
	}
	return out, nil
}

// RequestSeed is the seed sent for a request: Sampling.Seed itself when
// the request names no session, else a value derived from the seed, the
// session and the conversation's length. Every sample of an RL group
// shares the run's seed; sent as it is, a seeded server (vLLM, tinylm)
// would draw the same reply for each of them, and the group would have
// no variance to learn from. Derived, each session and turn gets its own
// draw, and a replay of the same session the same one.
func RequestSeed(seed int64, session string, messages int) int64 {
	if session == "" {
		return seed
	}
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(messages))
	h.Write(b[:])
	h.Write([]byte(session))
	return int64(h.Sum64() >> 2) // non-negative and below 2^62, within every server's seed range
}

type outcomeKind int

const (
	outcomeOK          outcomeKind = iota
	outcomeRetry                   // infrastructure failure worth retrying
	outcomeUnavailable             // infrastructure failure, no retry
	outcomeFatal                   // caller or configuration error
)

type outcome struct {
	kind       outcomeKind
	completion policy.Completion
	status     int           // HTTP status, 0 when no response
	err        error         // set unless kind == outcomeOK
	retryAfter time.Duration // from Retry-After, -1 when absent
}

// attempt makes one request, holding a concurrency slot for its duration.
func (c *Client) attempt(ctx context.Context, body []byte, sessionID string) outcome {
	if c.sem != nil {
		select {
		case c.sem <- struct{}{}:
			defer func() { <-c.sem }()
		case <-ctx.Done():
			return outcome{kind: outcomeFatal, err: ctx.Err(), retryAfter: -1}
		}
	}
	actx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return outcome{kind: outcomeFatal, err: fmt.Errorf("openai: build request: %w", err), retryAfter: -1}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	if sessionID != "" {
		hreq.Header.Set("X-Session-ID", sessionID)
	}

	resp, err := c.http.Do(hreq)
	if err != nil {
		return outcome{kind: outcomeRetry, err: c.transportErr("send request", actx, err), retryAfter: -1}
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBytes))
		_ = resp.Body.Close()
	}()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return classifyStatus(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return outcome{kind: outcomeRetry, status: resp.StatusCode, err: c.transportErr("read response", actx, err), retryAfter: -1}
	}
	if len(data) > maxResponseBytes {
		return outcome{kind: outcomeRetry, status: resp.StatusCode,
			err: fmt.Errorf("openai: response body exceeds %d bytes", maxResponseBytes), retryAfter: -1}
	}
	comp, err := parseResponse(data)
	if err != nil {
		return outcome{kind: outcomeRetry, status: resp.StatusCode, err: err, retryAfter: -1}
	}
	if comp.Model == "" {
		comp.Model = c.currentModel()
	}
	return outcome{kind: outcomeOK, completion: comp, status: resp.StatusCode}
}

// transportErr describes a failed round trip, naming per-attempt timeouts.
func (c *Client) transportErr(op string, actx context.Context, err error) error {
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("openai: %s: attempt timed out after %s: %w", op, c.timeout, err)
	}
	return fmt.Errorf("openai: %s: %w", op, err)
}

// classifyStatus turns a non-2xx response into an outcome.
func classifyStatus(resp *http.Response) outcome {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	apiErr := decodeAPIError(resp.StatusCode, raw)
	o := outcome{status: resp.StatusCode, err: apiErr, retryAfter: -1}
	switch code := resp.StatusCode; {
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests,
		code == http.StatusInternalServerError, code == http.StatusBadGateway,
		code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		o.kind = outcomeRetry
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			o.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
	case code >= 500:
		o.kind = outcomeUnavailable
	case code == http.StatusBadRequest && isContextLength(apiErr, raw):
		o.kind = outcomeFatal
		o.err = fmt.Errorf("%w: %w", policy.ErrContextLength, apiErr)
	default:
		o.kind = outcomeFatal
	}
	return o
}

// decodeAPIError reads both the OpenAI shape {"error": {...}} and vLLM's
// older flat shape {"object": "error", "message": ..., "code": 400}.
func decodeAPIError(status int, raw []byte) *APIError {
	type body struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	var env struct {
		body
		Error json.RawMessage `json:"error"`
	}
	e := &APIError{Status: status}
	if json.Unmarshal(raw, &env) == nil {
		b := env.body
		var nested body
		if len(env.Error) > 0 && json.Unmarshal(env.Error, &nested) == nil {
			b = nested
		} else if len(env.Error) > 0 {
			var s string
			if json.Unmarshal(env.Error, &s) == nil {
				b.Message = s
			}
		}
		e.Message, e.Type, e.Code = b.Message, b.Type, rawCode(b.Code)
	}
	if e.Message == "" {
		e.Message = truncate(strings.TrimSpace(string(raw)), 512)
	}
	return e
}

// rawCode renders an error code that may be a string or a number.
func rawCode(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// isContextLength reports whether a 400 answer is a context overflow, by
// the phrases OpenAI, vLLM, SGLang and Anthropic-style servers use.
func isContextLength(e *APIError, raw []byte) bool {
	markers := [...]string{
		"maximum context length",  // OpenAI, vLLM
		"context_length_exceeded", // OpenAI error code
		"prompt is too long",      // Anthropic-style proxies
		"maximum model length",    // vLLM "longer than the maximum model length"
		"context length",          // SGLang and others
	}
	text := strings.ToLower(e.Message + " " + e.Code + " " + e.Type + " " + string(raw))
	for _, m := range markers {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// parseRetryAfter returns the delay of a Retry-After header given in
// seconds or as an HTTP date, or -1 when absent or invalid.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || secs != secs {
			return -1
		}
		if secs > 1e6 {
			secs = 1e6
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

// delay is the sleep before retry number n (n >= 1).
func (c *Client) delay(n int, retryAfter time.Duration) time.Duration {
	if retryAfter >= 0 {
		return min(retryAfter, c.backoffMax)
	}
	d := c.backoffInitial
	for i := 1; i < n && d < c.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.backoffMax)
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// sleep waits for d or until ctx ends, returning ctx.Err() in that case.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// chatResponse is the part of a (vLLM-flavoured) chat.completion we use.
type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
		TokenIDs     []int   `json:"token_ids"`
	} `json:"choices"`
	PromptTokenIDs []int `json:"prompt_token_ids"`
	Usage          *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// parseResponse decodes a 2xx body. Any error means the server answered
// something that is not a usable chat completion.
//
// A null message content (a reasoning model that spent its whole budget in
// reasoning_content, or a tool-call-only answer) yields Content "": the
// reasoning text is not part of the policy's message. When token_ids are
// absent but logprobs are present, only Logprobs is filled, unless every
// logprob token has vLLM's "token_id:<n>" form (return_tokens_as_token_ids),
// in which case TokenIDs is recovered from them.
func parseResponse(data []byte) (policy.Completion, error) {
	var r chatResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return policy.Completion{}, fmt.Errorf("openai: decode response: %w (body: %q)", err, truncate(string(data), 200))
	}
	if len(r.Choices) == 0 {
		return policy.Completion{}, fmt.Errorf("openai: response has no choices (body: %q)", truncate(string(data), 200))
	}
	ch := r.Choices[0]
	comp := policy.Completion{
		Model:          r.Model,
		PromptTokenIDs: r.PromptTokenIDs,
		TokenIDs:       ch.TokenIDs,
	}
	if ch.Message.Content != nil {
		comp.Content = *ch.Message.Content
	}
	if ch.FinishReason != nil {
		comp.FinishReason = *ch.FinishReason
	}
	if r.Usage != nil {
		comp.PromptTokens = r.Usage.PromptTokens
		comp.CompletionTokens = r.Usage.CompletionTokens
	}
	if ch.Logprobs != nil && len(ch.Logprobs.Content) > 0 {
		lp := make([]float64, len(ch.Logprobs.Content))
		for i, t := range ch.Logprobs.Content {
			lp[i] = t.Logprob
		}
		comp.Logprobs = lp
		if comp.TokenIDs == nil {
			ids := make([]int, 0, len(ch.Logprobs.Content))
			for _, t := range ch.Logprobs.Content {
				id, ok := tokenIDFromToken(t.Token)
				if !ok {
					ids = nil
					break
				}
				ids = append(ids, id)
			}
			comp.TokenIDs = ids
		}
		if comp.TokenIDs != nil && len(comp.TokenIDs) != len(comp.Logprobs) {
			return policy.Completion{}, fmt.Errorf("openai: response has %d token ids but %d logprobs", len(comp.TokenIDs), len(comp.Logprobs))
		}
	}
	return comp, nil
}

// tokenIDFromToken parses vLLM's "token_id:<n>" token rendering.
func tokenIDFromToken(tok string) (int, bool) {
	s, ok := strings.CutPrefix(tok, "token_id:")
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(s)
	if err != nil || id < 0 {
		return 0, false
	}
	return id, true
}
