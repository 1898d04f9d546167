package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/otcurate/otcurate/agent/terminus"
	"github.com/otcurate/otcurate/policy"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/trial"
)

// Config bounds an episode.
type Config struct {
	MaxTurns int // model calls; default 32
	// Timeout caps the episode's wall time; 0 = the task's agent timeout.
	Timeout time.Duration
	// ContextTokens is the context budget: the episode ends (context_exceeded)
	// once a prompt would exceed it. Token counts come from the backend's
	// usage when it reports them, else ~4 characters per token.
	ContextTokens int // default 32768
	Sampling      policy.Sampling
	// Rollout asks the backend for token ids and log-probabilities.
	Rollout bool
	// ObservationLimit truncates each observation (head and tail kept);
	// default terminus.ObservationLimit (10,000 bytes).
	ObservationLimit int
	// ReadyTimeout bounds the wait for the shell's first prompt; default 10 s.
	ReadyTimeout time.Duration
	// MinCommandWait: each command waits for its prompt at least this
	// long, whatever duration the policy asked for (a command that
	// returns sooner still ends the wait). 0, the default, waits what the
	// policy asked, as terminus-2 does; then what the policy reads next
	// depends on the machine's load (a command still running when its
	// duration ends shows no output yet). Tests of reproducibility set it.
	MinCommandWait time.Duration
	// Prompt is the prompt wording: terminus-2's (the default) or the
	// compact one for small models. The reply format is the same.
	Prompt PromptStyle
}

func (c Config) withDefaults() Config {
	if c.MaxTurns <= 0 {
		c.MaxTurns = 32
	}
	if c.ContextTokens <= 0 {
		c.ContextTokens = 32768
	}
	if c.ObservationLimit <= 0 {
		c.ObservationLimit = terminus.ObservationLimit
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 10 * time.Second
	}
	return c
}

// End says why an episode ended.
type End string

// Episode ends.
const (
	Completed         End = "completed"          // two consecutive task_complete
	MaxTurns          End = "max_turns"          // turn cap reached
	AgentTimeout      End = "agent_timeout"      // wall-clock timeout; the verifier still runs
	ContextExceeded   End = "context_exceeded"   // context budget; the verifier still runs
	PolicyUnavailable End = "policy_unavailable" // the backend failed: the episode is void
	ShellExited       End = "shell_exited"       // the agent ended its shell (exit, C-d)
)

// Turn is one model call and what followed it.
type Turn struct {
	Index          int                `json:"index"`
	Completion     policy.Completion  `json:"completion"`
	ParseError     string             `json:"parse_error,omitempty"`
	Warnings       []string           `json:"warnings,omitempty"`
	Commands       []terminus.Command `json:"commands,omitempty"`
	TaskComplete   bool               `json:"task_complete"`
	Observation    string             `json:"observation,omitempty"`
	ModelSeconds   float64            `json:"model_seconds"`
	ExecSeconds    float64            `json:"exec_seconds"`    // typing and waiting for the commands
	HarnessSeconds float64            `json:"harness_seconds"` // everything else: parsing, prompts, bookkeeping
}

// Trajectory is the full record of an episode.
type Trajectory struct {
	Task     string           `json:"task"`
	Policy   string           `json:"policy"`
	Messages []policy.Message `json:"messages"`
	Turns    []Turn           `json:"turns"`
	End      End              `json:"end"`
	Detail   string           `json:"detail,omitempty"`
	Seconds  float64          `json:"seconds"`
	// Tokens are summed over turns (as the backend reported them).
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// ModelSeconds, ExecSeconds and HarnessSeconds sum the turns' times.
func (t *Trajectory) ModelSeconds() float64 {
	return t.sum(func(x Turn) float64 { return x.ModelSeconds })
}

// ExecSeconds is the time spent typing and waiting for commands.
func (t *Trajectory) ExecSeconds() float64 {
	return t.sum(func(x Turn) float64 { return x.ExecSeconds })
}

// HarnessSeconds is the harness's own time.
func (t *Trajectory) HarnessSeconds() float64 {
	return t.sum(func(x Turn) float64 { return x.HarnessSeconds })
}

func (t *Trajectory) sum(f func(Turn) float64) float64 {
	var s float64
	for _, x := range t.Turns {
		s += f(x)
	}
	return s
}

// Harness runs episodes of a policy: it is a trial.Actor.
type Harness struct {
	Policy policy.Policy
	Config Config
	// Session names the rollout for prefix-cache routing (X-Session-ID);
	// default: the task path.
	Session string
}

var _ trial.Actor = (*Harness)(nil)

// Name is the policy's name.
func (h *Harness) Name() string { return h.Policy.Name() }

// Act runs one episode in sb. Sandbox failures are returned as errors
// (the trial is retried); policy backend failures void the run.
func (h *Harness) Act(ctx context.Context, sb sandbox.Sandbox, t *trial.Task) (trial.ActReport, error) {
	cfg := h.Config
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Duration(t.Info.Config.Agent.TimeoutSec * float64(time.Second))
	}
	session := h.Session
	if session == "" {
		session = t.Path
	}
	instruction, _ := t.Bundle.Data("instruction.md")
	traj, err := h.Run(ctx, sb, Episode{Task: t.Path, Instruction: string(instruction),
		User: t.Info.Config.Agent.User, Workdir: t.Info.Config.Environment.Workdir, Session: session}, cfg)
	if err != nil {
		return trial.ActReport{Trajectory: traj}, err
	}
	rep := trial.ActReport{Trajectory: traj, Detail: string(traj.End)}
	switch traj.End {
	case AgentTimeout:
		rep.TimedOut = true
	case PolicyUnavailable:
		rep.Unavailable = errors.New(traj.Detail)
	}
	return rep, nil
}

// Episode is what one run needs to know about the task.
type Episode struct {
	Task        string
	Instruction string
	User        string // the shell's user ("" = image default)
	Workdir     string
	Session     string
}

// Run plays one episode with cfg (defaults applied). The error is a
// sandbox infrastructure failure or ctx's cancellation; everything else
// ends the episode with an End.
func (h *Harness) Run(ctx context.Context, sb sandbox.Sandbox, ep Episode, cfg Config) (*Trajectory, error) {
	cfg = cfg.withDefaults()
	start := time.Now()
	traj := &Trajectory{Task: ep.Task, Policy: h.Policy.Name()}
	defer func() { traj.Seconds = time.Since(start).Seconds() }()

	// The episode's own deadline; ctx (the caller's) still cancels.
	ectx := ctx
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	sh, err := OpenShell(ctx, sb, ep.User, ep.Workdir)
	if err != nil {
		return traj, err
	}
	defer sh.Close()
	if err := sh.Wait(ectx, 1, cfg.ReadyTimeout); err != nil && ctx.Err() != nil {
		return traj, ctx.Err()
	}
	first := cfg.Prompt.First(ep.Instruction, terminus.Truncate(sh.Take(), cfg.ObservationLimit))
	traj.Messages = append(traj.Messages, policy.Message{Role: policy.RoleUser, Content: first})

	pendingComplete := false
	for turn := 0; ; turn++ {
		if turn >= cfg.MaxTurns {
			traj.End = MaxTurns
			return traj, nil
		}
		if estimateTokens(traj) > cfg.ContextTokens {
			traj.End, traj.Detail = ContextExceeded, fmt.Sprintf("the conversation exceeds the %d-token budget", cfg.ContextTokens)
			return traj, nil
		}
		tr := Turn{Index: turn}
		t0 := time.Now()
		comp, err := h.Policy.Complete(ectx, policy.Request{Messages: traj.Messages, Sampling: cfg.Sampling,
			SessionID: ep.Session, Rollout: cfg.Rollout})
		tr.ModelSeconds = time.Since(t0).Seconds()
		if err != nil {
			if ctx.Err() != nil {
				return traj, ctx.Err()
			}
			switch {
			case ectx.Err() != nil:
				traj.End, traj.Detail = AgentTimeout, fmt.Sprintf("no reply within the agent timeout (%s)", cfg.Timeout)
			case errors.Is(err, policy.ErrContextLength):
				traj.End, traj.Detail = ContextExceeded, err.Error()
			default:
				traj.End, traj.Detail = PolicyUnavailable, err.Error()
			}
			return traj, nil
		}
		t1 := time.Now()
		tr.Completion = comp
		traj.PromptTokens += comp.PromptTokens
		traj.CompletionTokens += comp.CompletionTokens
		traj.Messages = append(traj.Messages, policy.Message{Role: policy.RoleAssistant, Content: comp.Content})

		reply, perr := terminus.Parse(comp.Content)
		var next string
		if perr != nil {
			tr.ParseError = perr.Error()
			pendingComplete = false
			next = ParseErrorPrompt(perr)
			tr.HarnessSeconds = time.Since(t1).Seconds()
		} else {
			tr.Warnings, tr.Commands, tr.TaskComplete = reply.Warnings, reply.Commands, reply.TaskComplete
			tr.HarnessSeconds = time.Since(t1).Seconds()
			t2 := time.Now()
			execErr := h.exec(ectx, sh, reply.Commands, cfg.MinCommandWait)
			tr.ExecSeconds = time.Since(t2).Seconds()
			t3 := time.Now()
			tr.Observation = terminus.Truncate(sh.Take(), cfg.ObservationLimit)
			if execErr != nil {
				traj.Turns = append(traj.Turns, tr)
				switch {
				case ctx.Err() != nil:
					return traj, ctx.Err()
				case ectx.Err() != nil:
					traj.End, traj.Detail = AgentTimeout, fmt.Sprintf("the agent timeout (%s) passed while commands ran", cfg.Timeout)
					return traj, nil
				case errors.Is(execErr, errShellExited):
					traj.End, traj.Detail = ShellExited, "the agent's shell exited"
					return traj, nil
				}
				return traj, fmt.Errorf("terminal: %w", execErr)
			}
			switch {
			case reply.TaskComplete && pendingComplete:
				tr.HarnessSeconds += time.Since(t3).Seconds()
				traj.Turns = append(traj.Turns, tr)
				traj.End = Completed
				return traj, nil
			case reply.TaskComplete:
				pendingComplete = true
				next = cfg.Prompt.Confirm(tr.Observation)
			default:
				pendingComplete = false
				next = ObservationPrompt(tr.Observation, reply.Warnings)
			}
			tr.HarnessSeconds += time.Since(t3).Seconds()
		}
		traj.Messages = append(traj.Messages, policy.Message{Role: policy.RoleUser, Content: next})
		traj.Turns = append(traj.Turns, tr)
	}
}

// exec types each command and waits for it.
func (h *Harness) exec(ctx context.Context, sh *Shell, cmds []terminus.Command, minWait time.Duration) error {
	for _, c := range cmds {
		wait := max(time.Duration(c.Duration*float64(time.Second)), minWait)
		if err := sh.Send(ctx, terminus.KeySequence(c.Keystrokes), wait); err != nil {
			return err
		}
	}
	return nil
}

// estimateTokens is the size of the next prompt: the backend's count of
// the last prompt plus what was appended since, or ~4 characters a token
// when the backend reports no usage.
func estimateTokens(t *Trajectory) int {
	if n := len(t.Turns); n > 0 && t.Turns[n-1].Completion.PromptTokens > 0 {
		last := t.Turns[n-1].Completion
		tail := len(t.Messages[len(t.Messages)-1].Content) / 4
		return last.PromptTokens + last.CompletionTokens + tail
	}
	chars := 0
	for _, m := range t.Messages {
		chars += len(m.Content)
	}
	return chars / 4
}

// Commands lists the commands typed in the episode, in order, without
// their trailing newline.
func (t *Trajectory) Commands() []string {
	out := []string{}
	for _, turn := range t.Turns {
		for _, c := range turn.Commands {
			out = append(out, strings.TrimRight(c.Keystrokes, "\n"))
		}
	}
	return out
}

// Transcript renders the trajectory's messages for people.
func (t *Trajectory) Transcript() string {
	var b strings.Builder
	for _, m := range t.Messages {
		fmt.Fprintf(&b, "### %s\n%s\n\n", m.Role, m.Content)
	}
	return b.String()
}

// Attempt is one scored episode.
type Attempt struct {
	Result     trial.Result
	Trajectory *Trajectory // nil when the sandbox never got to the agent (build or start defect)
}

// Reward is the verifier's reward, 0 when it gave none.
func (a Attempt) Reward() float64 {
	if a.Result.Reward == nil {
		return 0
	}
	return *a.Result.Reward
}

// RunAttempt plays one episode of h on t in a fresh sandbox and scores it
// with the task's verifier. The error is reserved for cancellation.
func RunAttempt(ctx context.Context, r *trial.Runner, t *trial.Task, h *Harness, labels map[string]string) (Attempt, error) {
	res, err := r.Run(ctx, t, trial.Options{Actor: h, Repeats: 1, Labels: labels})
	if err != nil {
		return Attempt{}, err
	}
	a := Attempt{Result: res[0]}
	a.Trajectory, _ = res[0].Trajectory.(*Trajectory)
	return a, nil
}
