package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/otcurate/otcurate/agent"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/policy/builtin"
	"github.com/otcurate/otcurate/policy/openai"
)

// policyOptions are the flags that choose and configure a policy and the
// harness around it (run, difficulty, traces, train).
type policyOptions struct {
	kind        string // builtin | openai
	checkpoint  string // builtin weights (default: the cold start)
	seed        int64
	baseURL     string
	apiKey      string
	model       string
	concurrency int
	temperature float64
	topP        float64
	maxTokens   int
	maxTurns    int
	timeout     time.Duration
	context     int
	prompt      string
}

func (o *policyOptions) addFlags(f *pflag.FlagSet, defaultTemp float64) {
	f.StringVar(&o.kind, "policy", "builtin", "policy backend: builtin (CPU, no model) or openai (an OpenAI-compatible server)")
	f.StringVar(&o.checkpoint, "policy-checkpoint", "", "built-in policy weights (default: its cold-start weights)")
	f.Int64Var(&o.seed, "policy-seed", 1, "sampling seed (the built-in policy is deterministic from it)")
	f.StringVar(&o.baseURL, "base-url", "", "OpenAI-compatible API root, e.g. http://host:8000/v1 (default $OPENAI_BASE_URL)")
	f.StringVar(&o.apiKey, "api-key", "", "API key (default $OPENAI_API_KEY)")
	f.StringVar(&o.model, "model", "", "served model name (openai policy)")
	f.IntVar(&o.concurrency, "policy-concurrency", 8, "requests in flight to the model server at once")
	f.Float64Var(&o.temperature, "temperature", defaultTemp, "sampling temperature (0 = greedy)")
	f.Float64Var(&o.topP, "top-p", 0, "nucleus sampling (0 = server default)")
	f.IntVar(&o.maxTokens, "max-tokens", 0, "tokens per reply (0 = server default)")
	f.IntVar(&o.maxTurns, "max-turns", 16, "model calls per episode")
	f.DurationVar(&o.timeout, "agent-timeout", 0, "episode wall-clock cap (0 = the task's agent timeout)")
	f.IntVar(&o.context, "context-tokens", 32768, "context budget per episode")
	f.StringVar(&o.prompt, "prompt", "terminus", "prompt wording: terminus (terminus-2's protocol text) or compact (one line of it, for small models; the same reply format)")
}

// build makes the policy.
func (o *policyOptions) build() (policy.Policy, error) {
	if _, err := agent.ParsePromptStyle(o.prompt); err != nil {
		return nil, usageErr(err)
	}
	switch o.kind {
	case "builtin":
		if o.checkpoint != "" {
			return builtin.Load(o.checkpoint)
		}
		return builtin.New(o.seed), nil
	case "openai":
		return openai.New(openai.ConfigFromEnv(openai.Config{BaseURL: o.baseURL, APIKey: o.apiKey, Model: o.model, Concurrency: o.concurrency}))
	}
	return nil, usageErr(fmt.Errorf("--policy must be builtin or openai, not %q", o.kind))
}

// identity names the policy and its weights for the ledger: a changed
// checkpoint or model recomputes cached difficulty verdicts.
func (o *policyOptions) identity() (string, error) {
	style, err := agent.ParsePromptStyle(o.prompt)
	if err != nil {
		return "", usageErr(err)
	}
	id, err := o.weightsIdentity()
	if err != nil || style == agent.PromptTerminus {
		return id, err
	}
	return id + " prompt=" + string(style), nil
}

// weightsIdentity names the policy and its weights.
func (o *policyOptions) weightsIdentity() (string, error) {
	switch o.kind {
	case "builtin":
		if o.checkpoint == "" {
			return "builtin/cold-start", nil
		}
		data, err := os.ReadFile(o.checkpoint)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		return "builtin/" + hex.EncodeToString(sum[:8]), nil
	}
	return "openai/" + o.baseURL + "/" + o.model, nil
}

// harnessConfig is the harness configuration the flags describe.
func (o *policyOptions) harnessConfig() agent.Config {
	seed := o.seed
	style, _ := agent.ParsePromptStyle(o.prompt) // checked by identity and build
	return agent.Config{MaxTurns: o.maxTurns, Timeout: o.timeout, ContextTokens: o.context, Prompt: style,
		Sampling: policy.Sampling{Temperature: o.temperature, TopP: o.topP, MaxTokens: o.maxTokens, Seed: &seed}}
}
