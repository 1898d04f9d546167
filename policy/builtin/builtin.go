// Package builtin is the embedded CPU policy: a log-linear softmax over
// structured shell actions. Each turn it makes a few categorical
// decisions (act, look around or declare the task complete; which
// command template, from a fixed vocabulary of generic text and file
// commands; which candidate value fills each typed slot), each
// π(o|s) = softmax(θ·φ(s,o)/T), and emits the result as real terminus-2
// JSON, so the harness, parser, terminal and verifier path is exactly the
// one a language model goes through. It starts from a small documented
// cold-start prior (prefer commands whose description shares words with
// the instruction, write where the text says to write, finish after
// acting) and learns everything else; Update and UpdateAdaGrad step its
// weights, Save and Restore checkpoint them.
//
// The "tokens" of a completion are the chosen option indices, one per
// decision, and their log-probabilities are exact; the trainer replays
// them (LogProb) to get ∇log π = (φ(s,o) − E_π[φ]) / T. Values come only
// from the conversation (the instruction and terminal output), never from
// a task's tests/ or solution/.
package builtin

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/otcurate/otcurate/atomicfile"
	"github.com/otcurate/otcurate/policy"
)

// Policy is the built-in policy. It is safe for concurrent use; Update
// must not run while rollouts sample (the trainer alternates them).
type Policy struct {
	seed int64

	mu      sync.RWMutex
	w       map[string]float64
	version int
	// accum is AdaGrad's sum of squared gradients per weight (empty
	// until UpdateAdaGrad is used).
	accum map[string]float64
}

var _ policy.Policy = (*Policy)(nil)

// New returns the policy with its cold-start weights. seed drives
// sampling when a request carries no seed of its own.
func New(seed int64) *Policy {
	w := make(map[string]float64, len(coldStart))
	for k, v := range coldStart {
		w[k] = v
	}
	return &Policy{seed: seed, w: w}
}

// Name is "builtin".
func (p *Policy) Name() string { return "builtin" }

// Version counts updates.
func (p *Policy) Version() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.version
}

// Complete samples the next reply at req.Sampling.Temperature (0 =
// greedy). The draw is a pure function of the seed, the session id and
// the conversation so far, so a rollout replays identically whatever the
// scheduling.
func (p *Policy) Complete(ctx context.Context, req policy.Request) (policy.Completion, error) {
	if err := ctx.Err(); err != nil {
		return policy.Completion{}, err
	}
	T := req.Sampling.Temperature
	seed := p.seed
	if req.Sampling.Seed != nil {
		seed = *req.Sampling.Seed
	}
	rng := rand.New(rand.NewPCG(uint64(seed), conversationHash(req.SessionID, req.Messages)))
	s := parseState(req.Messages)

	p.mu.RLock()
	var logps []float64
	a, err := walk(s, func(d *decision) int {
		scores := p.scores(d)
		if T <= 0 {
			best := 0
			for i := range scores {
				if scores[i] > scores[best] {
					best = i
				}
			}
			logps = append(logps, 0)
			return best
		}
		lp := logSoftmax(scores, T)
		u, i := rng.Float64(), 0
		for acc := math.Exp(lp[0]); u > acc && i < len(lp)-1; {
			i++
			acc += math.Exp(lp[i])
		}
		logps = append(logps, lp[i])
		return i
	})
	version := p.version
	p.mu.RUnlock()
	if err != nil {
		return policy.Completion{}, fmt.Errorf("builtin policy: %w", err)
	}
	content := reply(a)
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(m.Content) / 4
	}
	return policy.Completion{
		Content: content, FinishReason: "stop",
		TokenIDs: a.chosen, Logprobs: logps,
		PromptTokens: prompt, CompletionTokens: len(a.chosen),
		Model: fmt.Sprintf("builtin@%d", version),
	}, nil
}

func (p *Policy) scores(d *decision) []float64 {
	out := make([]float64, len(d.opts))
	for i, fs := range d.feats {
		for _, f := range fs {
			out[i] += p.w[f.key] * f.val
		}
	}
	return out
}

// reply renders an action as terminus-2 JSON. The plan starts with the
// action id, which is how the policy reads its own history.
func reply(a *action) string {
	type command struct {
		Keystrokes string  `json:"keystrokes"`
		Duration   float64 `json:"duration"`
	}
	r := struct {
		Analysis     string    `json:"analysis"`
		Plan         string    `json:"plan"`
		Commands     []command `json:"commands"`
		TaskComplete bool      `json:"task_complete"`
	}{Commands: []command{}}
	switch a.kind {
	case "complete":
		r.Analysis = "The command that produces the requested result has run."
		r.Plan = "complete: mark the task as complete"
		r.TaskComplete = true
	default:
		r.Analysis = "The task asks to " + a.tmpl.Doc + "."
		r.Plan = a.tmpl.ID + ": " + a.tmpl.Doc
		// A generous duration: the harness returns as soon as the shell
		// prompts again, so it costs nothing, and the observation then
		// never depends on how busy the machine is (a command cut off at
		// 1 s on a loaded host would change what the policy sees next and
		// make runs with the same seed diverge).
		r.Commands = append(r.Commands, command{Keystrokes: a.cmd + "\n", Duration: 10})
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keystrokes hold > and &, shown as typed
	_ = enc.Encode(r)
	return strings.TrimSuffix(b.String(), "\n")
}

// conversationHash mixes the session id and the messages.
func conversationHash(session string, msgs []policy.Message) uint64 {
	h := fnv.New64a()
	h.Write([]byte(session))
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(msgs)))
	h.Write(n[:])
	for _, m := range msgs {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Grad is a sparse gradient over feature keys.
type Grad map[string]float64

// LogProb replays a recorded completion: the log-probability of its
// tokens given the conversation before it, under the current weights at
// temperature T (> 0), and, when grad is non-nil, adds scale·∇ of it to
// grad.
func (p *Policy) LogProb(msgs []policy.Message, tokens []int, T float64, grad Grad, scale float64) (float64, error) {
	var total float64
	err := p.replay(msgs, tokens, T, func(d *decision, lp []float64, c int) {
		total += lp[c]
		if grad == nil {
			return
		}
		for i, fs := range d.feats {
			coef := -math.Exp(lp[i])
			if i == c {
				coef += 1
			}
			for _, f := range fs {
				grad[f.key] += scale * coef * f.val / T
			}
		}
	})
	return total, err
}

// Entropy replays a recorded completion like LogProb and returns the summed
// entropy of the choices it went through (each decision's distribution over
// all its options, at temperature T); when grad is non-nil it adds scale·∇
// of that entropy to grad. An entropy bonus in the loss keeps a policy that
// has become sure of a wrong choice sampling the alternatives.
func (p *Policy) Entropy(msgs []policy.Message, tokens []int, T float64, grad Grad, scale float64) (float64, error) {
	return p.EntropyBelow(msgs, tokens, T, math.Inf(1), grad, scale)
}

// EntropyBelow is Entropy with a floor: only the decisions whose entropy is
// below floor × its maximum (the log of its number of options) add to
// grad, so a bonus built on it raises entropy where the policy is sure and
// stops there instead of flattening every choice. The returned entropy
// counts every decision.
func (p *Policy) EntropyBelow(msgs []policy.Message, tokens []int, T, floor float64, grad Grad, scale float64) (float64, error) {
	var total float64
	err := p.replay(msgs, tokens, T, func(d *decision, lp []float64, _ int) {
		var h float64
		for _, l := range lp {
			h -= math.Exp(l) * l
		}
		total += h
		if grad == nil || !(h < floor*math.Log(float64(len(lp)))) {
			return
		}
		// ∂H/∂s_i = −p_i (log p_i + H) / T for scores s_i.
		for i, fs := range d.feats {
			coef := -math.Exp(lp[i]) * (lp[i] + h) / T
			for _, f := range fs {
				grad[f.key] += scale * coef * f.val
			}
		}
	})
	return total, err
}

// replay walks a recorded completion's decisions under the current weights
// and calls fn with each decision, its log-probabilities at temperature T
// and the recorded choice.
func (p *Policy) replay(msgs []policy.Message, tokens []int, T float64, fn func(d *decision, lp []float64, c int)) error {
	if T <= 0 {
		return fmt.Errorf("replaying a completion needs a temperature > 0")
	}
	s := parseState(msgs)
	p.mu.RLock()
	defer p.mu.RUnlock()
	k := 0
	_, err := walk(s, func(d *decision) int {
		if k >= len(tokens) {
			return -1
		}
		c := tokens[k]
		k++
		if c < 0 || c >= len(d.opts) {
			return -1
		}
		fn(d, logSoftmax(p.scores(d), T), c)
		return c
	})
	if err != nil {
		return fmt.Errorf("replaying tokens %v: %w", tokens, err)
	}
	if k != len(tokens) {
		return fmt.Errorf("replaying tokens %v: the action used %d of them", tokens, k)
	}
	return nil
}

// Update adds lr·g to the weights and bumps the version.
func (p *Policy) Update(g Grad, lr float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, v := range g {
		if v == 0 {
			continue
		}
		p.w[k] += lr * v
	}
	p.version++
}

// UpdateAdaGrad takes an AdaGrad step: each weight moves by
// lr·g/(√Σg² + ε), its own gradient history scaling it. In a log-linear
// policy over word features this lets a rare, telling word ("insensitive",
// "not directories") learn as fast as the words every instruction shares,
// which plain steps drown. The sums are part of the checkpoint.
func (p *Policy) UpdateAdaGrad(g Grad, lr float64) {
	const eps = 1e-8
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.accum == nil {
		p.accum = map[string]float64{}
	}
	for k, v := range g {
		if v == 0 {
			continue
		}
		p.accum[k] += v * v
		p.w[k] += lr * v / (math.Sqrt(p.accum[k]) + eps)
	}
	p.version++
}

// checkpoint is the on-disk form.
type checkpoint struct {
	Format  string             `json:"format"`
	Version int                `json:"version"`
	Seed    int64              `json:"seed"`
	Weights map[string]float64 `json:"weights"`
	// AdaGrad are the optimizer's sums (UpdateAdaGrad), when used.
	AdaGrad map[string]float64 `json:"adagrad,omitempty"`
}

// Save writes the weights to path atomically.
func (p *Policy) Save(path string) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return atomicfile.WriteJSON(path, checkpoint{Format: "otcurate-builtin-policy/1", Version: p.version, Seed: p.seed, Weights: p.w, AdaGrad: p.accum})
}

// Load reads a checkpoint written by Save.
func Load(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Format != "otcurate-builtin-policy/1" {
		return nil, fmt.Errorf("%s: not a built-in policy checkpoint (format %q)", path, c.Format)
	}
	if c.Weights == nil {
		c.Weights = map[string]float64{}
	}
	return &Policy{seed: c.Seed, w: c.Weights, version: c.Version, accum: c.AdaGrad}, nil
}

// Restore replaces the weights and version with a checkpoint's (the
// policy object stays the same, so harnesses holding it see the change).
func (p *Policy) Restore(path string) error {
	q, err := Load(path)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.w, p.version, p.seed, p.accum = q.w, q.version, q.seed, q.accum
	return nil
}

// Weights returns the non-zero weights, sorted by key (for reports).
func (p *Policy) Weights() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []string
	for k, v := range p.w {
		if v != 0 {
			out = append(out, fmt.Sprintf("%s=%.4g", k, v))
		}
	}
	sort.Strings(out)
	return out
}
