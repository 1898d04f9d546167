package policy

import (
	"context"
	"errors"
	"fmt"
)

// Role of a chat message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Sampling are the sampling parameters of a request. Zero values mean
// "the backend's default", except Temperature, which is always sent
// (0 = greedy).
type Sampling struct {
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p,omitempty"`
	TopK        int     `json:"top_k,omitempty"`
	MaxTokens   int     `json:"max_tokens,omitempty"`
	Seed        *int64  `json:"seed,omitempty"`
}

// Request asks for the next assistant message.
type Request struct {
	Messages []Message
	Sampling Sampling
	// SessionID identifies the rollout (sent as X-Session-ID and used for
	// prefix-cache routing by servers that support it).
	SessionID string
	// Rollout asks for token ids and log-probabilities (RL needs them).
	Rollout bool
}

// Completion is the backend's answer.
type Completion struct {
	Content string `json:"content"`
	// FinishReason is "stop", "length", ... as the backend reports it.
	FinishReason string `json:"finish_reason,omitempty"`
	// PromptTokenIDs, TokenIDs and Logprobs are filled when the backend
	// returns them (Rollout requests); Logprobs[i] belongs to TokenIDs[i].
	PromptTokenIDs []int     `json:"prompt_token_ids,omitempty"`
	TokenIDs       []int     `json:"token_ids,omitempty"`
	Logprobs       []float64 `json:"logprobs,omitempty"`
	// Token counts as reported by the backend (usage).
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Model is the model (or policy version) that answered.
	Model string `json:"model,omitempty"`
}

// Policy produces the next assistant message of a conversation. It must
// be safe for concurrent use.
type Policy interface {
	// Name identifies the policy and its version in records.
	Name() string
	// Complete returns the next message. Errors are classified with
	// *Unavailable (the backend could not answer: infrastructure, never
	// the task's fault) and ErrContextLength.
	Complete(ctx context.Context, req Request) (Completion, error)
}

// ErrContextLength reports that the conversation no longer fits the
// model's context window. The harness ends the episode and still runs the
// verifier (the reference recipe's "passthrough").
var ErrContextLength = errors.New("context length exceeded")

// Unavailable is an infrastructure failure of the backend (connection
// refused, 5xx or 429 after all retries, malformed responses from the
// server). A rollout that ends with it is excluded from RL baselines and
// from pass rates instead of being scored 0.
type Unavailable struct {
	Attempts int   // requests made
	Status   int   // last HTTP status, 0 when none
	Err      error // last error
}

func (e *Unavailable) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("policy backend unavailable after %d attempt(s) (last HTTP %d): %v", e.Attempts, e.Status, e.Err)
	}
	return fmt.Sprintf("policy backend unavailable after %d attempt(s): %v", e.Attempts, e.Err)
}

func (e *Unavailable) Unwrap() error { return e.Err }

// IsUnavailable reports whether err is (or wraps) *Unavailable.
func IsUnavailable(err error) bool {
	var u *Unavailable
	return errors.As(err, &u)
}
