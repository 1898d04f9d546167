package trial

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// Agent is who acts in the sandbox before verification.
type Agent string

// Built-in agents.
const (
	Oracle Agent = "oracle" // runs solution/solve.sh
	Nop    Agent = "nop"    // does nothing: the negative control
)

// Actor is an agent other than the built-in oracle and nop: it acts in
// the started sandbox before the verifier runs (the agent harness with a
// policy implements it).
type Actor interface {
	// Name is recorded as the result's agent.
	Name() string
	// Act works in sb on t. The returned error is an infrastructure
	// failure of the sandbox (the session is retried); a failure of the
	// actor's own backend (a model endpoint) is reported in ActReport.
	Act(ctx context.Context, sb sandbox.Sandbox, t *Task) (ActReport, error)
}

// ActReport is what an Actor reports.
type ActReport struct {
	// TimedOut: the agent hit its timeout. The verifier still runs; what
	// the timeout means depends on who ran out of time
	// (AgentKind.TimeoutIsDefect): the oracle's is a task defect
	// (SolveTimeout), any other agent's reward stands and the result
	// carries a warning.
	TimedOut bool
	// Unavailable, when set, voids the run: the actor's backend could not
	// answer (policy endpoint down). The result is PolicyUnavailable, an
	// infrastructure outcome, and no verifier runs.
	Unavailable error
	// Trajectory is the actor's record, carried on every result.
	Trajectory any
	Detail     string
	// Exit is the agent process's exit code when there is one (solve.sh).
	Exit *int
}

// OracleActor is the oracle agent: it copies solution/ to /solution and
// runs solve.sh as the agent user under the agent timeout.
type OracleActor struct{ r *Runner }

// Name is "oracle".
func (OracleActor) Name() string { return string(Oracle) }

// Act runs solve.sh.
func (a OracleActor) Act(ctx context.Context, sb sandbox.Sandbox, t *Task) (ActReport, error) {
	res, err := a.r.solve(ctx, sb, t)
	if err != nil {
		return ActReport{}, err
	}
	code := res.ExitCode
	return ActReport{Exit: &code, TimedOut: res.TimedOut}, nil
}

// NopActor is the nop agent: the negative control does nothing.
type NopActor struct{}

// Name is "nop".
func (NopActor) Name() string { return string(Nop) }

// Act does nothing.
func (NopActor) Act(context.Context, sandbox.Sandbox, *Task) (ActReport, error) {
	return ActReport{}, nil
}

// builtinActor maps the Agent shorthand to its actor.
func builtinActor(r *Runner, a Agent) Actor {
	if a == Oracle {
		return OracleActor{r: r}
	}
	return NopActor{}
}

// Task is a decoded task ready to run.
type Task struct {
	Path   string
	Bundle *bundle.Bundle
	Info   *bundle.Info
}

// LoadTask decodes and validates a bundle, keeping every file's content.
func LoadTask(path string, blob []byte, lim bundle.Limits) (*Task, error) {
	b, err := bundle.Scan(blob, lim, bundle.RetainAll(lim))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	info, err := bundle.Validate(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Task{Path: path, Bundle: b, Info: info}, nil
}

// Options configure a run.
type Options struct {
	Agent Agent
	// Actor, when set, replaces Agent: it acts in the sandbox and its
	// name is recorded as the agent.
	Actor   Actor
	Repeats int  // verifier runs; ≥ 1
	Isolate bool // a fresh sandbox (and solve) per repeat instead of re-verifying one post-solution state
	// AllowNetwork lets a task that asks for network (Harbor's default
	// "public") have it. Off by default: curation runs offline.
	AllowNetwork bool
	Labels       map[string]string
	InfraRetries int           // attempts after an infrastructure failure; default 2
	Backoff      time.Duration // first retry delay; default 1 s, doubled each time
	// StopOnDisagreement ends the repeats of a session at the first result
	// whose outcome or reward differs from the first one (sequential
	// early stopping: the evidence is already conclusive).
	StopOnDisagreement bool
	// StopWhen, when set, also ends the repeats of a session after a
	// result for which it returns true (a verdict already decided by
	// that run, such as an unscored or too slow verifier).
	StopWhen func(Result) bool
	// VerifierTimeoutCap, when set, lowers a task's verifier timeout to it
	// (curation need not wait 600 s for a verifier it will drop as slow).
	VerifierTimeoutCap time.Duration
	// BuildTimeoutCap, when set, lowers a task's build timeout to it (the
	// env stage's slow-build threshold).
	BuildTimeoutCap time.Duration
	// Rebuild builds the environment even when its image is cached,
	// without the layer cache.
	Rebuild bool
	// VerifierSandbox is where test.sh runs: VerifierShared ("" too) in
	// the agent's sandbox, VerifierSeparate in a fresh one carrying only
	// the agent's work.
	VerifierSandbox VerifierSandbox
}

// VerifierSandbox selects where the verifier runs.
//
// Fresh (the default, "" too): once the agent is done, its processes are
// killed, every change it made to its sandbox's filesystem is collected
// (sandbox.ChangeCollector), its sandbox is stopped, and a fresh sandbox
// from the same image receives those changes except the ones the trust
// rule refuses (sandbox.TrustFilter: the image's interpreters, shells,
// test runners, libraries, loader and configuration changed, anything
// new that shadows them on the executable or module search path, startup
// hooks, links into the verifier's paths or a home directory); test.sh
// then runs there on the image's own toolchain, in a process space the
// agent never touched. What was refused is listed on every result
// (Result.Tampered) and the reward is what the carried work earns. It
// needs a backend whose sandboxes list their changes and whose root this
// process can read (Docker with the engine on this host, and the fake);
// elsewhere Run fails at once with sandbox.ErrFreshUnsupported.
//
// Separate: the same, carrying only the agent's work roots
// (sandbox.WorkPath: the workdir, /app, /home, /root and /tmp, never
// system paths or home dot-files): stricter, and a solution relying on
// packages it installed into system paths fails there.
//
// Shared (opt-in, weaker): in the agent's own sandbox, after every
// process the agent started is killed and /tests and /logs/verifier are
// created afresh. What it cannot guarantee: test.sh runs the image's
// bash, python3, pytest and libraries as the agent left them, so an agent
// that replaced or shadowed one of them (a python3 earlier on PATH, a
// .pth file, a sitecustomize) decides the verdict; and code the agent
// injected into a process that was running when the sandbox started
// survives. Commands warn when it is chosen.
type VerifierSandbox string

// The verifier sandbox modes.
const (
	VerifierFresh    VerifierSandbox = "fresh"
	VerifierShared   VerifierSandbox = "shared"
	VerifierSeparate VerifierSandbox = "separate"
)

// ParseVerifierSandbox checks a --verifier-sandbox value ("" is fresh).
func ParseVerifierSandbox(s string) (VerifierSandbox, error) {
	switch VerifierSandbox(s) {
	case "", VerifierFresh:
		return VerifierFresh, nil
	case VerifierShared:
		return VerifierShared, nil
	case VerifierSeparate:
		return VerifierSeparate, nil
	}
	return "", fmt.Errorf("--verifier-sandbox %q: want fresh, separate or shared", s)
}

// SharedWarning is what commands print when the shared mode is chosen.
const SharedWarning = "--verifier-sandbox shared runs test.sh in the agent's own sandbox: an agent that replaced or shadowed the verifier's tools (a python3 earlier on PATH, a .pth file, a sitecustomize) can forge its reward; use it only for trusted agents or backends that support nothing else"

// Durations are per-phase wall times in seconds.
type Durations struct {
	Build    float64 `json:"build"`
	Start    float64 `json:"start"`
	Solve    float64 `json:"solve"`
	Verify   float64 `json:"verify"`   // the whole verify phase (copy tests, run, read back)
	Verifier float64 `json:"verifier"` // test.sh alone
	// Carry is the fresh or separate verifier sandbox's overhead: collect
	// the agent's changes, start a fresh sandbox, judge and apply them.
	Carry    float64 `json:"carry,omitempty"`
	Teardown float64 `json:"teardown"`
}

// Result is the outcome of one verifier run.
type Result struct {
	Task         string             `json:"task"`
	Agent        Agent              `json:"agent"`
	Repeat       int                `json:"repeat"`
	Outcome      Outcome            `json:"outcome"`
	Reward       *float64           `json:"reward"`
	Rewards      map[string]float64 `json:"rewards,omitempty"`
	Detail       string             `json:"detail,omitempty"`
	Warnings     []string           `json:"warnings,omitempty"`
	SolveExit    *int               `json:"solve_exit,omitempty"`
	VerifierExit *int               `json:"verifier_exit,omitempty"`
	ImageCached  bool               `json:"image_cached"`
	Sandboxes    int                `json:"sandboxes"` // containers started for this result's session
	Durations    Durations          `json:"durations"`
	Log          string             `json:"log,omitempty"` // tail of the relevant log
	// Tampered lists the agent's changes the verifier sandbox did not
	// receive (the trust rule of sandbox.TrustFilter), and failures after
	// the agent's turn that scored the attempt 0: non-empty means the
	// attempt is flagged tampered.
	Tampered []sandbox.Neutralised `json:"tampered,omitempty"`
	// Trajectory is the Actor's record (nil for oracle and nop).
	Trajectory any `json:"-"`
}

// Runner runs trials on a backend.
type Runner struct {
	Backend sandbox.Backend
	Logger  *slog.Logger
	// VerifierSandbox is the mode of runs whose Options leave it unset
	// (the --verifier-sandbox flag of every command that runs trials).
	VerifierSandbox VerifierSandbox
	// AllowNetwork gives every run the network its task asks for (the
	// --allow-network flag), as Options.AllowNetwork does for one run.
	AllowNetwork bool
	// MaxAgentTime caps the oracle's time (solve.sh) whatever task.toml's
	// [agent] timeout_sec says (the --max-agent-sec flag; 0: the task's
	// own): a solve.sh over it is solve_timeout, a task defect, and never
	// holds a worker for the task's 24 hours.
	MaxAgentTime time.Duration
}

// agentTimeout is the oracle's timeout for a task whose [agent]
// timeout_sec is sec, under MaxAgentTime, in seconds.
func (r *Runner) agentTimeout(sec float64) float64 {
	if r.MaxAgentTime > 0 && (sec <= 0 || sec > r.MaxAgentTime.Seconds()) {
		return r.MaxAgentTime.Seconds()
	}
	return sec
}

// SettingsKey is what the runner's settings add to a stage's ledger
// fingerprint, so verdicts of one verifier mode or network policy are
// never reused for the other: "" in the default shared, offline mode
// (earlier ledgers stay valid).
func (r *Runner) SettingsKey() string {
	if r == nil {
		return " verifier-sandbox=" + string(VerifierFresh)
	}
	mode := r.VerifierSandbox
	if mode == "" {
		mode = VerifierFresh
	}
	key := " verifier-sandbox=" + string(mode)
	if r.AllowNetwork {
		key += " network=allowed"
	}
	if r.MaxAgentTime > 0 {
		key += " max-agent=" + r.MaxAgentTime.String()
	}
	return key
}

const logTail = 8 << 10

// Run executes the agent and Repeats verifier runs. It returns one result
// per repeat. The error is reserved for cancellation and for options the
// backend cannot honour (sandbox.ErrWorkUnsupported).
func (r *Runner) Run(ctx context.Context, t *Task, o Options) ([]Result, error) {
	o = o.withDefaults()
	o.AllowNetwork = o.AllowNetwork || r.AllowNetwork
	if o.VerifierSandbox == "" {
		o.VerifierSandbox = r.VerifierSandbox
	}
	if _, err := ParseVerifierSandbox(string(o.VerifierSandbox)); err != nil {
		return nil, err
	}
	if o.Actor != nil {
		o.Agent = Agent(o.Actor.Name())
	}
	if o.Repeats < 1 {
		o.Repeats = 1
	}
	if !o.Isolate {
		return r.withRetry(ctx, t, o, o.Repeats, 0)
	}
	var all []Result
	for i := 0; i < o.Repeats; i++ {
		res, err := r.withRetry(ctx, t, o, 1, i)
		all = append(all, res...)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

func (o Options) withDefaults() Options {
	if o.InfraRetries == 0 {
		o.InfraRetries = 2
	}
	if o.Backoff == 0 {
		o.Backoff = time.Second
	}
	return o
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// withRetry runs a session, retrying infrastructure failures with backoff.
func (r *Runner) withRetry(ctx context.Context, t *Task, o Options, repeats, first int) ([]Result, error) {
	return retryInfra(ctx, r, t, o,
		func() ([]Result, error) { return r.session(ctx, t, o, repeats, first) },
		func(infra error) []Result { return fill(t, o, repeats, first, infraOutcome(infra), infra.Error()) })
}

// retryInfra calls attempt until it succeeds, retrying infrastructure
// failures (its error) with exponential backoff; after o.InfraRetries
// retries it returns giveUp's result. The error is ctx's, on cancellation.
func retryInfra[T any](ctx context.Context, r *Runner, t *Task, o Options, attempt func() (T, error), giveUp func(error) T) (T, error) {
	var zero T
	delay := o.Backoff
	for n := 0; ; n++ {
		res, infra := attempt()
		if infra == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return zero, ctx.Err()
		}
		if errors.Is(infra, sandbox.ErrWorkUnsupported) || errors.Is(infra, sandbox.ErrFreshUnsupported) { // a setting, not a failure
			return zero, infra
		}
		if n >= o.InfraRetries {
			return giveUp(infra), nil
		}
		r.logger().Warn("infrastructure failure, retrying", "task", t.Path, "attempt", n+1, "err", infra)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return zero, ctx.Err()
		}
		delay *= 2
	}
}

func infraOutcome(err error) Outcome {
	var ie *sandbox.InfraError
	if errors.As(err, &ie) {
		switch ie.Kind {
		case string(EngineUnavailable):
			return EngineUnavailable
		case string(OutOfDisk):
			return OutOfDisk
		}
	}
	return InfraError
}

// fill makes one identical result per repeat.
func fill(t *Task, o Options, repeats, first int, out Outcome, detail string) []Result {
	res := make([]Result, max(repeats, 1)) // Probe runs no verifier but still reports a defect
	for i := range res {
		res[i] = Result{Task: t.Path, Agent: o.Agent, Repeat: first + i, Outcome: out, Detail: detail}
	}
	return res
}

// session is one sandbox: build, start, act, then verify `repeats` times.
// A non-nil error is an infrastructure failure (the results are void).
func (r *Runner) session(ctx context.Context, t *Task, o Options, repeats, first int) (results []Result, infra error) {
	var d Durations
	return r.sessionTimed(ctx, t, o, repeats, first, &d)
}

// sessionTimed is session with the phase durations written to *dp (for
// Probe, which has no result per repeat to carry them).
func (r *Runner) sessionTimed(ctx context.Context, t *Task, o Options, repeats, first int, dp *Durations) (results []Result, infra error) {
	cfg := t.Info.Config
	d := dp
	if t.Info.EnvKind != "dockerfile" {
		return fill(t, o, repeats, first, UnsupportedEnv, fmt.Sprintf("environment kind %q is not supported yet (Dockerfile only)", t.Info.EnvKind)), nil
	}
	if o.Agent == Oracle && !t.Info.HasSolution {
		return fill(t, o, repeats, first, NoSolution, "the task has no solution/solve.sh"), nil
	}
	envFiles, err := t.Bundle.Entries("environment")
	if err != nil {
		return nil, err
	}

	// Build.
	t0 := time.Now()
	buildTimeout := seconds(cfg.Environment.BuildTimeoutSec)
	if o.BuildTimeoutCap > 0 && (buildTimeout <= 0 || buildTimeout > o.BuildTimeoutCap) {
		buildTimeout = o.BuildTimeoutCap
	}
	img, err := r.Backend.Build(ctx, sandbox.Environment{Hash: t.Bundle.EnvHash, Files: envFiles,
		BuildTimeout: buildTimeout, Task: t.Path, Rebuild: o.Rebuild})
	d.Build = since(t0)
	if err != nil {
		var be *sandbox.BuildError
		if errors.As(err, &be) {
			out := BuildFailed
			switch {
			case be.Timeout:
				out = BuildTimeout
			case be.Offline:
				out = BuildNeedsNetwork
			}
			res := fill(t, o, repeats, first, out, be.Error())
			for i := range res {
				res[i].Log, res[i].Durations = tail(be.Log), *d
			}
			return res, nil
		}
		return nil, err
	}

	// Start (and wait for the healthcheck).
	t0 = time.Now()
	spec := sandbox.StartSpec{
		Image: img, Workdir: cfg.Environment.Workdir, Env: cfg.Environment.Env,
		Network:     o.AllowNetwork && cfg.Environment.NetworkMode != "no-network",
		Resources:   sandbox.Resources{CPUs: cfg.Environment.CPUs, MemoryMB: cfg.Environment.MemoryMB, StorageMB: cfg.Environment.StorageMB},
		Labels:      mergeLabels(o.Labels, map[string]string{sandbox.LabelTask: t.Path, sandbox.LabelEnv: t.Bundle.EnvHash}),
		Healthcheck: cfg.Environment.Healthcheck,
	}
	sb, err := r.Backend.Start(ctx, spec)
	d.Start = since(t0)
	if err != nil {
		var he *sandbox.HealthcheckError
		if errors.As(err, &he) {
			res := fill(t, o, repeats, first, EnvironmentUnhealthy, he.Error())
			for i := range res {
				res[i].Durations = *d
			}
			return res, nil
		}
		return nil, err
	}
	defer func() {
		t0 := time.Now()
		stopErr := sb.Stop(context.WithoutCancel(ctx))
		d.Teardown += since(t0) // after the verifier sandbox's, in separate mode
		for i := range results {
			results[i].Durations.Teardown = d.Teardown
		}
		if stopErr != nil {
			r.logger().Warn("sandbox teardown failed; `otcurate sandbox gc` will remove it", "task", t.Path, "err", stopErr)
		}
	}()

	// Act.
	actor := o.Actor
	if actor == nil {
		actor = builtinActor(r, o.Agent)
	}
	// A limit the sandbox exceeded (storage) decides every result of the
	// session, whatever the steps after it failed with (before Stop, so
	// the last writes are measured).
	defer func() {
		le := sandbox.Exceeded(sb)
		if le == nil || ctx.Err() != nil {
			return
		}
		if len(results) == 0 {
			results = fill(t, o, repeats, first, InfraError, "")
		}
		for i := range results {
			results[i].Durations, results[i].Sandboxes = *d, 1
			applyLimit(&results[i], KindOf(actor), le)
		}
		infra = nil
	}()
	// The verifier's sandbox (fresh and separate modes) starts while the
	// agent acts: it is a new sandbox from the image that nothing of the
	// agent's reaches until its changes are applied, so its start need not
	// wait for the agent's turn.
	var pre *pendingStart
	if o.VerifierSandbox != VerifierShared && repeats > 0 {
		pre = r.startAsync(ctx, spec)
		defer pre.release(ctx, r, t)
	}
	t0 = time.Now()
	act, err := actor.Act(ctx, sb, t)
	d.Solve = since(t0)
	if err != nil {
		if sandbox.EndedInside(err) { // the agent stopped its own sandbox, or broke a tool the backend needs
			return stoppedResults(t, o, repeats, first, *d, act, err), nil
		}
		return nil, err
	}
	if act.Unavailable != nil {
		res := fill(t, o, repeats, first, PolicyUnavailable, act.Unavailable.Error())
		for i := range res {
			res[i].Durations, res[i].Trajectory, res[i].Sandboxes = *d, act.Trajectory, 1
		}
		return res, nil
	}

	// In separate mode the verifier gets a fresh sandbox with the work.
	vsb, sandboxes := sb, 1
	var carryWarnings []string
	var tampered []sandbox.Neutralised
	if o.VerifierSandbox != VerifierShared && repeats > 0 {
		t0 = time.Now()
		fresh, early, warns, neu, stopped, err := r.separate(ctx, t, o, sb, pre, repeats, first, *d, act)
		d.Carry = since(t0)
		defer stopped()
		if err != nil && early == nil {
			var vs *verifierStartError
			if errors.As(err, &vs) {
				return nil, vs.err // the engine's doing, never the agent's: infrastructure as it is
			}
			return r.afterAgent(ctx, t, o, spec, repeats, first, *d, act, err, sb, pre.sandbox())
		}
		if early != nil {
			return early, nil
		}
		defer func() {
			t0 := time.Now()
			defer func() { d.Teardown += since(t0) }()
			if err := fresh.Stop(context.WithoutCancel(ctx)); err != nil {
				r.logger().Warn("verifier sandbox teardown failed; `otcurate sandbox gc` will remove it", "task", t.Path, "err", err)
			}
		}()
		vsb, sandboxes, carryWarnings, tampered = fresh, 2, warns, neu
	}

	// Verify, repeatedly, on the same post-solution state.
	for i := 0; i < repeats; i++ {
		t0 = time.Now()
		res, err := r.verify(ctx, vsb, t, o)
		if err != nil {
			if sandbox.EndedInside(err) {
				return append(results, stoppedResults(t, o, repeats-i, first+i, *d, act, err)...), nil
			}
			rest, err := r.afterAgent(ctx, t, o, spec, repeats-i, first+i, *d, act, err, sb, vsb)
			if err != nil {
				return nil, err
			}
			return append(results, rest...), nil
		}
		verifier := res.Durations.Verifier
		res.Durations = *d
		res.Durations.Verify, res.Durations.Verifier = since(t0), verifier
		res.Repeat, res.Agent, res.Task = first+i, o.Agent, t.Path
		res.SolveExit, res.ImageCached, res.Sandboxes = act.Exit, img.Cached, sandboxes
		res.Warnings = append(res.Warnings, img.Warnings...)
		res.Warnings = append(res.Warnings, sandbox.WarningsOf(sb)...)
		res.Warnings = append(res.Warnings, carryWarnings...)
		res.Tampered = append(res.Tampered, tampered...)
		res.Trajectory = act.Trajectory
		if act.TimedOut {
			limit := cfg.Agent.TimeoutSec
			if KindOf(actor) == KindReference {
				limit = r.agentTimeout(limit)
			}
			applyTimeout(&res, KindOf(actor), limit)
		}
		results = append(results, res)
		if o.StopOnDisagreement && !sameResult(results[0], res) || o.StopWhen != nil && o.StopWhen(res) {
			break
		}
	}
	return results, nil
}

// separate carries the agent's changes from sb to a fresh sandbox started
// from spec (see VerifierSandbox: all of them under the trust rule in the
// fresh mode, the work roots in the separate one) and stops sb. It returns
// the fresh sandbox and the changes it refused, or the session's results
// when the agent decided them (it stopped its sandbox, or its work is too
// large to carry: scored 0), or an infrastructure error.
//
// The agent's sandbox is stopped while the verifier runs: stopped waits
// for that stop (the caller defers it; it is never nil).
func (r *Runner) separate(ctx context.Context, t *Task, o Options, sb sandbox.Sandbox, pre *pendingStart, repeats, first int, d Durations, act ActReport) (fresh sandbox.Sandbox, early []Result, warnings []string, neutralised []sandbox.Neutralised, stopped func(), err error) {
	stopped = func() {}
	if err := sb.KillAll(ctx); err != nil {
		if sandbox.EndedInside(err) {
			return nil, stoppedResults(t, o, repeats, first, d, act, err), nil, nil, stopped, nil
		}
		return nil, nil, nil, nil, stopped, err
	}
	var work sandbox.Work
	if o.VerifierSandbox == VerifierSeparate {
		work, err = sandbox.CollectWork(ctx, sb)
	} else {
		work, err = sandbox.CollectChanges(ctx, sb)
	}
	if err != nil {
		var big *sandbox.WorkTooLargeError
		switch {
		case errors.As(err, &big):
			return nil, stoppedResults(t, o, repeats, first, d, act, err), nil, nil, stopped, nil
		case sandbox.EndedInside(err):
			return nil, stoppedResults(t, o, repeats, first, d, act, err), nil, nil, stopped, nil
		}
		return nil, nil, nil, nil, stopped, err
	}
	// The agent's sandbox is done (a limit it exceeded was measured by
	// now): it is removed while the verifier's starts and runs.
	if sandbox.Exceeded(sb) == nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := sb.Stop(context.WithoutCancel(ctx)); err != nil {
				r.logger().Warn("agent sandbox teardown failed; `otcurate sandbox gc` will remove it", "task", t.Path, "err", err)
			}
		}()
		stopped = func() { <-done }
	}
	fresh, err = pre.take()
	if err != nil {
		var he *sandbox.HealthcheckError
		if errors.As(err, &he) {
			res := fill(t, o, repeats, first, EnvironmentUnhealthy, "the verifier sandbox: "+he.Error())
			for i := range res {
				res[i].Durations, res[i].Sandboxes, res[i].Trajectory = d, 2, act.Trajectory
			}
			return nil, res, nil, nil, stopped, nil
		}
		return nil, nil, nil, nil, stopped, &verifierStartError{err}
	}
	if work, neutralised, err = r.carry(ctx, t, o, fresh, work); err != nil {
		_ = fresh.Stop(context.WithoutCancel(ctx))
		return nil, nil, nil, nil, stopped, err
	}
	if n := len(work.Skipped); n > 0 {
		warnings = append(warnings, fmt.Sprintf("%d changed path(s) not carried to the verifier sandbox, e.g. %s", n, work.Skipped[0]))
	}
	if n := len(neutralised); n > 0 {
		warnings = append(warnings, fmt.Sprintf("tampered: %d change(s) of the agent's touch the verifier's trust base and were not carried, e.g. %s", n, neutralised[0]))
	}
	return fresh, nil, warnings, neutralised, stopped, nil
}

// carry judges the agent's changes under the trust rule (fresh mode) and
// applies what passes to fresh, re-indexing carried libraries with the
// image's own ldconfig: the loader's cache is the image's (rule 1).
func (r *Runner) carry(ctx context.Context, t *Task, o Options, fresh sandbox.Sandbox, work sandbox.Work) (sandbox.Work, []sandbox.Neutralised, error) {
	var neutralised []sandbox.Neutralised
	if o.VerifierSandbox != VerifierSeparate {
		var err error
		if work, neutralised, err = r.trust(ctx, t, fresh, work); err != nil {
			return work, nil, err
		}
	}
	if err := sandbox.ApplyWork(ctx, fresh, work); err != nil {
		return work, nil, err
	}
	if o.VerifierSandbox != VerifierSeparate && touchesLibraries(work) {
		if _, err := fresh.Exec(ctx, sandbox.ExecRequest{Cmd: "command -v ldconfig >/dev/null 2>&1 && ldconfig 2>/dev/null; true", User: "root", Timeout: time.Minute}); err != nil {
			return work, nil, err
		}
	}
	return work, neutralised, nil
}

// verifierStartError is a failure to start the verifier's sandbox. That
// sandbox comes from the image alone, started while the agent acted, so
// nothing of the agent's state takes part in its start: the failure is the
// engine's, an infrastructure error as it is, and never judged by
// afterAgent (whose probe, on a fleet, may land on another engine that
// works and blame the agent).
type verifierStartError struct{ err error }

func (e *verifierStartError) Error() string { return "start the verifier's sandbox: " + e.err.Error() }
func (e *verifierStartError) Unwrap() error { return e.err }

// pendingStart is a sandbox being started in the background (the
// verifier's, while the agent acts).
type pendingStart struct {
	done  chan struct{}
	sb    sandbox.Sandbox
	err   error
	taken bool
}

// startAsync starts a sandbox from spec in the background.
func (r *Runner) startAsync(ctx context.Context, spec sandbox.StartSpec) *pendingStart {
	p := &pendingStart{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.sb, p.err = r.Backend.Start(ctx, spec)
	}()
	return p
}

// sandbox is the started sandbox, nil when none (or p is nil); it does not
// wait.
func (p *pendingStart) sandbox() sandbox.Sandbox {
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.sb
	default:
		return nil
	}
}

// take waits for the start; the caller owns the sandbox from then on.
func (p *pendingStart) take() (sandbox.Sandbox, error) {
	<-p.done
	p.taken = true
	return p.sb, p.err
}

// release stops the sandbox when nobody took it (the session ended
// before verification): no sandbox is left behind, on Ctrl-C either.
func (p *pendingStart) release(ctx context.Context, r *Runner, t *Task) {
	if p.taken {
		return
	}
	<-p.done
	if p.sb == nil {
		return
	}
	if err := p.sb.Stop(context.WithoutCancel(ctx)); err != nil {
		r.logger().Warn("verifier sandbox teardown failed; `otcurate sandbox gc` will remove it", "task", t.Path, "err", err)
	}
}

// trust applies the trust rule (sandbox.TrustFilter) to the agent's
// changes, judged against fresh, a sandbox from the image with nothing
// applied yet, whose own tools report the verifier's search paths.
func (r *Runner) trust(ctx context.Context, t *Task, fresh sandbox.Sandbox, work sandbox.Work) (sandbox.Work, []sandbox.Neutralised, error) {
	opener, ok := fresh.(sandbox.RootOpener)
	if !ok {
		return work, nil, sandbox.ErrFreshUnsupported
	}
	cfg := t.Info.Config
	res, err := fresh.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.SearchPathsScript, User: cfg.Verifier.User, Env: cfg.Verifier.Env, Timeout: time.Minute, MaxOutput: 64 << 10})
	if err != nil {
		return work, nil, err
	}
	wd := work.Workdir
	if wd == "" {
		wd = "/"
	}
	sp := sandbox.ParseSearchPaths(string(res.Stdout), wd)
	root, err := opener.OpenRoot()
	if err != nil {
		return work, nil, fmt.Errorf("open the verifier sandbox's root: %w", err)
	}
	defer syscall.Close(root)
	return sandbox.TrustFilter(root, work, sp)
}

// touchesLibraries reports whether carried changes lie in a library
// directory (new shared libraries the loader's cache must list).
func touchesLibraries(w sandbox.Work) bool {
	for _, e := range w.Entries {
		n := "/" + e.Name
		if strings.HasPrefix(n, "/usr/lib/") || strings.HasPrefix(n, "/lib") || strings.HasPrefix(n, "/usr/local/lib/") {
			if strings.Contains(path.Base(n), ".so") {
				return true
			}
		}
	}
	return false
}

// afterAgent is the one rule for a failure after the agent's turn (issue
// 29): resetting, cleaning, collecting, carrying, applying or verifying
// that fails once code of the agent has run is the agent's doing, scored
// 0 and flagged tampered, unless a probe on a fresh sandbox from the same
// image shows the engine itself is down (then the error stands, an
// infrastructure failure retried as any other). Cancellation and
// unsupported settings are returned as they are.
func (r *Runner) afterAgent(ctx context.Context, t *Task, o Options, spec sandbox.StartSpec, repeats, first int, d Durations, act ActReport, err error, involved ...sandbox.Sandbox) ([]Result, error) {
	if ctx.Err() != nil || errors.Is(err, sandbox.ErrWorkUnsupported) || errors.Is(err, sandbox.ErrFreshUnsupported) {
		return nil, err
	}
	// The engines of the sandboxes involved first: on a fleet, the probe
	// below may land on another engine that works.
	for _, sb := range involved {
		if sb == nil {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		perr := sandbox.PingEngine(pctx, sb)
		cancel()
		if perr != nil {
			r.logger().Warn("a failure after the agent's turn, and the sandbox's engine does not answer: infrastructure", "task", t.Path, "err", err, "ping", perr)
			return nil, err
		}
	}
	if perr := r.probeEngine(ctx, spec); perr != nil {
		r.logger().Warn("a failure after the agent's turn, and the engine fails a probe too: infrastructure", "task", t.Path, "err", err, "probe", perr)
		return nil, err
	}
	res := stoppedResults(t, o, repeats, first, d, act, fmt.Errorf("after the agent's turn: %w (a probe sandbox from the same image works, so the agent's state is to blame)", err))
	for i := range res {
		res[i].Tampered = append(res[i].Tampered, sandbox.Neutralised{Rule: "failure", Detail: err.Error()})
	}
	return res, nil
}

// probeEngine starts a sandbox from spec's image, runs `true` in it and
// stops it: nil when the engine works.
func (r *Runner) probeEngine(ctx context.Context, spec sandbox.StartSpec) error {
	spec.Healthcheck = nil
	spec.Labels = mergeLabels(spec.Labels, map[string]string{sandbox.LabelTask: "probe"})
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	sb, err := r.Backend.Start(pctx, spec)
	if err != nil {
		return err
	}
	defer func() { _ = sb.Stop(context.WithoutCancel(ctx)) }()
	res, err := sb.Exec(pctx, sandbox.ExecRequest{Cmd: "true", User: "root", Timeout: time.Minute})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("probe: `true` exited %d", res.ExitCode)
	}
	return nil
}

// stoppedResults scores 0 the repeats of a sandbox that stopped after
// Start with the engine answering: the agent (or what it left behind)
// ended it, which must never look like an infrastructure failure.
func stoppedResults(t *Task, o Options, repeats, first int, d Durations, act ActReport, err error) []Result {
	res := fill(t, o, repeats, first, Scored, "scored 0: "+err.Error())
	for i := range res {
		zero := 0.0
		res[i].Reward, res[i].Durations, res[i].Sandboxes = &zero, d, 1
		res[i].SolveExit, res[i].Trajectory = act.Exit, act.Trajectory
	}
	return res
}

func sameResult(a, b Result) bool {
	if a.Outcome != b.Outcome {
		return false
	}
	if a.Reward == nil || b.Reward == nil {
		return a.Reward == b.Reward
	}
	return *a.Reward == *b.Reward
}

func mergeLabels(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// solve copies solution/ to /solution and runs solve.sh as the agent user
// under the agent timeout, output in /logs/agent/oracle.txt.
func (r *Runner) solve(ctx context.Context, sb sandbox.Sandbox, t *Task) (sandbox.ExecResult, error) {
	cfg := t.Info.Config
	files, err := t.Bundle.Entries("solution")
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	if err := sb.Upload(ctx, "/solution", files); err != nil {
		return sandbox.ExecResult{}, err
	}
	if _, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: "chmod -R a+rX /solution && chmod +x /solution/solve.sh", User: "root", Timeout: time.Minute}); err != nil {
		return sandbox.ExecResult{}, err
	}
	env := map[string]string{"DEBIAN_FRONTEND": "noninteractive"}
	for k, v := range cfg.Solution.Env {
		env[k] = v
	}
	return sb.Exec(ctx, sandbox.ExecRequest{
		Cmd:     runScript("/solution/solve.sh", t.Bundle, "solution/solve.sh") + " > /logs/agent/oracle.txt 2>&1",
		User:    cfg.Agent.User,
		Env:     env,
		Timeout: seconds(r.agentTimeout(cfg.Agent.TimeoutSec)),
	})
}

// runScript executes a script directly when it has a shebang (Harbor makes
// it executable as root first), else through bash.
func runScript(path string, b *bundle.Bundle, member string) string {
	if data, ok := b.Data(member); ok && bytes.HasPrefix(data, []byte("#!")) {
		return path
	}
	return "bash " + path
}

// verify runs the verifier once on the current state and classifies it.
//
// Nothing the agent left behind decides how the result is read. First
// every process the agent started is killed (sb.KillAll, from outside the
// sandbox where the backend can), so nothing runs alongside test.sh. Then
// /logs/verifier and /tests are removed and created afresh (never merged
// into, never through a symlink) with the task's tests/ in /tests. After
// test.sh (run as the verifier user) every process is killed again, and
// the reward files and the log tail are read host-side where the backend
// can (sb.ReadFile: no symlink followed, nothing but a regular file
// opened): a reward path the sandbox turned into a directory, symlink,
// FIFO or device reads as reward 0. The network verdict needs evidence
// (sb.NetAttempts), not just words in the output.
func (r *Runner) verify(ctx context.Context, sb sandbox.Sandbox, t *Task, o Options) (Result, error) {
	cfg := t.Info.Config
	var res Result
	tests, err := t.Bundle.Entries("tests")
	if err != nil {
		return res, err
	}
	script := "/" + t.Info.TestScript
	if err := sb.KillAll(ctx); err != nil {
		return res, err
	}
	net0, netOK, err := sb.NetAttempts(ctx)
	if err != nil {
		return res, err
	}
	if err := sb.ResetDir(ctx, "/logs/verifier", 0o777, nil); err != nil {
		return res, err
	}
	if err := sb.ResetDir(ctx, "/tests", 0o755, readableTests(tests, strings.TrimPrefix(t.Info.TestScript, "tests/"))); err != nil {
		return res, err
	}
	timeout := seconds(cfg.Verifier.TimeoutSec)
	if o.VerifierTimeoutCap > 0 && timeout > o.VerifierTimeoutCap {
		timeout = o.VerifierTimeoutCap
	}
	run, err := sb.Exec(ctx, sandbox.ExecRequest{
		Cmd:       runScript(script, t.Bundle, t.Info.TestScript) + " > /logs/verifier/test-stdout.txt 2>&1",
		User:      cfg.Verifier.User,
		Env:       cfg.Verifier.Env,
		Timeout:   timeout,
		MaxOutput: 4 << 10,
	})
	if err != nil {
		return res, err
	}
	res.Durations.Verifier = run.Duration.Seconds()
	code := run.ExitCode
	res.VerifierExit = &code
	if err := sb.KillAll(ctx); err != nil { // nothing writes while the result is read
		return res, err
	}
	rep, err := readReport(ctx, sb)
	if err != nil {
		return res, err
	}
	res.Log = rep.tail
	res.Warnings = append(res.Warnings, rep.warnings...)
	if run.TimedOut {
		res.Outcome, res.Detail = VerifierTimeout, fmt.Sprintf("test.sh exceeded the verifier timeout (%s)", timeout)
		return res, nil
	}
	if len(rep.mangled) > 0 {
		zero := 0.0
		res.Outcome, res.Reward = Scored, &zero
		res.Detail = "scored 0: " + strings.Join(rep.mangled, "; ")
		return res, nil
	}
	offline := !o.AllowNetwork || cfg.Environment.NetworkMode == "no-network"
	if offline && looksOffline(res.Log) {
		net1, ok, err := sb.NetAttempts(ctx)
		if err != nil {
			return res, err
		}
		attempted := netOK && ok && net1 > net0
		if attempted && o.Actor == nil {
			res.Outcome = VerifierNeedsNetwork
			res.Detail = fmt.Sprintf("the verifier tried to reach the network (%d unroutable packets), which the sandbox does not have; its reward (if any) is not trusted", net1-net0)
			return res, nil
		}
		res.Warnings = append(res.Warnings, networkWarning(netOK && ok, attempted))
	}
	classifyReward(&res, rep.txt, rep.hasTxt, rep.json, rep.hasJSON)
	return res, nil
}

// networkWarning explains why output that mentions a network failure did
// not make the run verifier_needs_network.
func networkWarning(observed, attempted bool) string {
	switch {
	case attempted:
		return "the verifier's output mentions a network failure and the sandbox tried to connect, but under this agent the attempt may be the agent's own code: the reward stands"
	case observed:
		return "the verifier's output mentions a network failure, but the sandbox made no connection attempt: the reward stands"
	}
	return "the verifier's output mentions a network failure; this backend cannot observe connection attempts, so the reward stands"
}

// readableTests is tests/ as the verifier sees it in /tests: readable by
// everyone, directories and already-executable files executable by
// everyone (chmod -R a+rX), and the test script executable.
func readableTests(tests []bundle.Entry, script string) []bundle.Entry {
	out := make([]bundle.Entry, len(tests))
	for i, e := range tests {
		if e.Kind == bundle.KindDir || e.Kind == bundle.KindFile {
			e.Mode |= 0o444
			if e.Kind == bundle.KindDir || e.Mode&0o111 != 0 || e.Name == script {
				e.Mode |= 0o111
			}
		}
		out[i] = e
	}
	return out
}

// report is what verify reads back after test.sh.
type report struct {
	txt, json       []byte
	hasTxt, hasJSON bool
	tail            string
	// mangled names reward paths that exist but are not regular files
	// (a directory, symlink, FIFO or device): the run scores 0.
	mangled  []string
	warnings []string
}

// Reward and log paths.
const (
	rewardTxt  = "/logs/verifier/reward.txt"
	rewardJSON = "/logs/verifier/reward.json"
	testStdout = "/logs/verifier/test-stdout.txt"
)

// readReport reads the reward files and the log tail with sb.ReadFile.
func readReport(ctx context.Context, sb sandbox.Sandbox) (report, error) {
	var rep report
	read := func(p string, max int64, tail bool) ([]byte, bool, error) {
		data, err := sb.ReadFile(ctx, p, max, tail)
		switch {
		case err == nil:
			return data, true, nil
		case errors.Is(err, sandbox.ErrNotFound):
			return nil, false, nil
		case errors.Is(err, sandbox.ErrNotRegular):
			if p == testStdout {
				rep.warnings = append(rep.warnings, fmt.Sprintf("%s is not a regular file; not read", p))
			} else {
				rep.mangled = append(rep.mangled, fmt.Sprintf("%s is not a regular file (%v)", p, err))
			}
			return nil, false, nil
		}
		return nil, false, err
	}
	var err error
	if rep.txt, rep.hasTxt, err = read(rewardTxt, 64<<10, false); err != nil {
		return rep, err
	}
	if rep.json, rep.hasJSON, err = read(rewardJSON, 64<<10, false); err != nil {
		return rep, err
	}
	log, _, err := read(testStdout, logTail, true)
	rep.tail = string(log)
	return rep, err
}

// classifyReward applies the reward-file contract.
func classifyReward(res *Result, txt []byte, hasTxt bool, js []byte, hasJSON bool) {
	var vTxt, vJSON float64
	var errTxt, errJSON error
	if hasTxt {
		vTxt, errTxt = parseRewardTxt(txt)
	}
	if hasJSON {
		vJSON, res.Rewards, errJSON = parseRewardJSON(js)
	}
	switch {
	case !hasTxt && !hasJSON:
		res.Outcome, res.Detail = RewardMissing, "test.sh wrote neither /logs/verifier/reward.txt nor reward.json"
	case hasTxt && errTxt != nil:
		res.Outcome, res.Detail = RewardInvalid, errTxt.Error()
	case hasJSON && errJSON != nil:
		res.Outcome, res.Detail = RewardInvalid, errJSON.Error()
	case hasTxt && hasJSON && vTxt != vJSON:
		res.Outcome = RewardAmbiguous
		res.Detail = fmt.Sprintf("reward.txt says %g and reward.json says %g; Harbor versions disagree on which wins", vTxt, vJSON)
	default:
		v := vTxt
		if hasJSON {
			v = vJSON
		}
		if hasTxt && hasJSON {
			res.Warnings = append(res.Warnings, "both reward.txt and reward.json written (they agree)")
		}
		res.Outcome, res.Reward = Scored, &v
	}
}

// seconds converts a task.toml period to a Duration. task.toml bounds
// periods to (0, bundle.MaxTimeoutSec]; a Config built by hand is clamped
// to MaxTimeoutSec instead of overflowing into "no limit", and zero (or
// a negative or NaN value) stays 0, which ExecRequest reads as no limit.
func seconds(s float64) time.Duration {
	if !(s > 0) {
		return 0
	}
	return time.Duration(min(s, bundle.MaxTimeoutSec) * float64(time.Second))
}

func since(t time.Time) float64 { return float64(time.Since(t).Milliseconds()) / 1000 }

func tail(s string) string {
	if len(s) > logTail {
		return "…" + s[len(s)-logTail:]
	}
	return strings.TrimSpace(s)
}

// Probe builds the task's environment, starts it (waiting for its
// healthcheck) and tears it down, timing each phase: what the env stage
// measures. Infrastructure failures are retried like Run's; the error is
// reserved for cancellation.
func (r *Runner) Probe(ctx context.Context, t *Task, o Options) (Result, error) {
	o = o.withDefaults()
	o.AllowNetwork = o.AllowNetwork || r.AllowNetwork
	return retryInfra(ctx, r, t, o,
		func() (Result, error) { return r.probe(ctx, t, o) },
		func(infra error) Result {
			return Result{Task: t.Path, Outcome: infraOutcome(infra), Detail: infra.Error()}
		})
}

func (r *Runner) probe(ctx context.Context, t *Task, o Options) (Result, error) {
	o.Repeats, o.Agent = 0, Nop
	res := Result{Task: t.Path, Agent: Nop, Outcome: Scored}
	var d Durations
	results, err := r.sessionTimed(ctx, t, o, 0, 0, &d)
	if err != nil {
		return res, err
	}
	if len(results) > 0 { // a build or start defect
		return results[0], nil
	}
	res.Durations = d
	res.Durations.Verify = 0
	return res, nil
}
