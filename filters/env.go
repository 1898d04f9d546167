package filters

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/pipeline"
	"github.com/otcurate/otcurate/trial"
)

// Reasons of the env stage (besides the trial build/start outcomes, which
// are used as reasons directly).
const (
	ReasonEnvStable        = "stable"
	ReasonEnvSlowBuild     = "environment_slow_build"
	ReasonEnvUnstable      = "environment_unstable"
	ReasonEnvSlowStart     = "environment_slow_start"
	ReasonEnvSlowTeardown  = "environment_slow_teardown"
	ReasonStageInterrupted = "interrupted"
	ReasonTaskUnloadable   = "task_unloadable"
)

// DefaultMaxBuild is the env stage's slow-build threshold. The reference
// recipe drops "tasks whose containers take too long to build"; its builds
// had 600 s. A task pool's environments are few and shared, so a build
// that needs minutes on a warm cache is an outlier worth dropping.
const DefaultMaxBuild = 120 * time.Second

// Env measures each unique environment once: build (cached by environment
// hash), start (healthcheck included) and teardown, and drops tasks whose
// environment does not build, does not become healthy, or is too slow to
// start or tear down. Tasks that share an environment (same environment/
// content and the same runtime settings) share the measurement.
type Env struct {
	Runner      *trial.Runner
	Limits      bundle.Limits
	MaxBuild    time.Duration // default 120 s: builds are cut off there (the task's own build_timeout_sec when lower)
	MaxStart    time.Duration // default 60 s
	MaxTeardown time.Duration // default 30 s
	// Repeats > 1 measures each environment that many times, the later
	// ones rebuilt from scratch (no image or layer cache): an environment
	// that builds or starts only sometimes is dropped as unstable, and the
	// slowest measurement is judged against the limits.
	Repeats int
	Labels  map[string]string

	cache *envCache
}

// NewEnv returns an env stage with its measurement cache.
func NewEnv(r *trial.Runner, lim bundle.Limits, labels map[string]string) *Env {
	return &Env{Runner: r, Limits: lim, Labels: labels, MaxBuild: DefaultMaxBuild, MaxStart: 60 * time.Second, MaxTeardown: 30 * time.Second,
		cache: &envCache{m: map[string]*envEntry{}}}
}

// Name implements pipeline.Stage.
func (*Env) Name() string { return StageEnv }

type envEntry struct {
	done     chan struct{}
	res      trial.Result   // the measurement judged (the slowest, or the first that failed)
	all      []trial.Result // every measurement
	unstable string         // why the measurements disagree, if they do
	err      error
	tasks    int
}

type envCache struct {
	mu sync.Mutex
	m  map[string]*envEntry
}

// envKey identifies what the measurement depends on: the environment's
// content and the task's runtime settings for it.
func envKey(t *trial.Task) string {
	e := t.Info.Config.Environment
	hc := ""
	if e.Healthcheck != nil {
		hc = fmt.Sprintf("%+v", *e.Healthcheck)
	}
	return fmt.Sprintf("%s|%s|%g|%d|%s|%s", t.Bundle.EnvHash, e.Workdir, e.CPUs, e.MemoryMB, e.NetworkMode, hc)
}

// Process implements pipeline.ItemStage.
func (s *Env) Process(ctx context.Context, it *pipeline.Item) pipeline.Outcome {
	t, err := runnableTask(it, s.Limits)
	if err != nil {
		return pipeline.ErrorOutcome(ReasonTaskUnloadable, err.Error())
	}
	key := envKey(t)
	s.cache.mu.Lock()
	e, ok := s.cache.m[key]
	if !ok {
		e = &envEntry{done: make(chan struct{})}
		s.cache.m[key] = e
	}
	e.tasks++
	s.cache.mu.Unlock()
	if !ok {
		s.measure(ctx, t, e)
		if e.err != nil || e.res.Infra() {
			// Do not cache an interruption or an infrastructure failure.
			s.cache.mu.Lock()
			delete(s.cache.m, key)
			s.cache.mu.Unlock()
		}
		close(e.done)
	} else {
		select {
		case <-e.done:
		case <-ctx.Done():
			return pipeline.ErrorOutcome(ReasonStageInterrupted, "interrupted")
		}
	}
	if e.err != nil {
		return pipeline.ErrorOutcome(ReasonStageInterrupted, e.err.Error())
	}
	out := s.judge(e.res, t, ok)
	if e.unstable != "" && out.Verdict != pipeline.Error {
		out = pipeline.DropOutcome(ReasonEnvUnstable, e.unstable)
	}
	if !ok { // the task that paid for the measurement carries its cost
		var sp spend
		for _, r := range e.all {
			sp.add([]trial.Result{r})
		}
		if e.unstable != "" {
			sp.ev.Log = e.res.Log
		}
		out = sp.attach(out)
	} else if e.res.Log != "" && out.Verdict != pipeline.Keep {
		out.Evidence = &pipeline.Evidence{Log: e.res.Log}
	}
	return out
}

// measure probes the environment once, or Repeats times (the later ones
// rebuilt without cache), and records what to judge.
func (s *Env) measure(ctx context.Context, t *trial.Task, e *envEntry) {
	opts := trial.Options{Labels: s.Labels, BuildTimeoutCap: s.MaxBuild}
	for i := 0; i < max(1, s.Repeats); i++ {
		opts.Rebuild = i > 0
		r, err := s.Runner.Probe(ctx, t, opts)
		if err != nil {
			e.err = err
			return
		}
		if r.Infra() {
			e.res = r // undecided: not cached, retried by a later task or run
			return
		}
		e.all = append(e.all, r)
	}
	e.res = e.all[0]
	failed := 0
	for _, r := range e.all {
		if !r.Scored() {
			failed++
			if e.res.Scored() {
				e.res = r
			}
			continue
		}
		if e.res.Scored() && r.Durations.Start+r.Durations.Teardown > e.res.Durations.Start+e.res.Durations.Teardown {
			e.res = r
		}
	}
	if failed > 0 && failed < len(e.all) {
		e.unstable = fmt.Sprintf("%d of %d measurements failed (first: %s: %s); the others built and started",
			failed, len(e.all), e.res.Outcome, e.res.Detail)
	}
}

func (s *Env) judge(r trial.Result, t *trial.Task, shared bool) pipeline.Outcome {
	d := r.Durations
	env := t.Bundle.EnvHash
	if len(env) > 12 {
		env = env[:12]
	}
	measured := "measured"
	if shared {
		measured = "shared measurement"
	}
	timing := fmt.Sprintf("environment %s (%s): build %.1fs, start %.1fs, teardown %.1fs", env, measured, d.Build, d.Start, d.Teardown)
	switch {
	case r.Infra():
		return pipeline.ErrorOutcome(string(r.Outcome), r.Detail)
	case r.Outcome == trial.BuildTimeout && s.MaxBuild > 0 && (t.Info.Config.Environment.BuildTimeoutSec <= 0 || s.MaxBuild.Seconds() < t.Info.Config.Environment.BuildTimeoutSec):
		return pipeline.DropOutcome(ReasonEnvSlowBuild, fmt.Sprintf("no image after %s (the env stage's limit; the task allows %gs); %s", s.MaxBuild, t.Info.Config.Environment.BuildTimeoutSec, timing))
	case r.TaskDefect():
		return pipeline.DropOutcome(string(r.Outcome), r.Detail+"; "+timing)
	case d.Start > s.MaxStart.Seconds():
		return pipeline.DropOutcome(ReasonEnvSlowStart, fmt.Sprintf("start took %.1fs (limit %s); %s", d.Start, s.MaxStart, timing))
	case d.Teardown > s.MaxTeardown.Seconds():
		return pipeline.DropOutcome(ReasonEnvSlowTeardown, fmt.Sprintf("teardown took %.1fs (limit %s); %s", d.Teardown, s.MaxTeardown, timing))
	}
	return pipeline.KeepOutcome(ReasonEnvStable, timing)
}

// Expensive implements pipeline.Expensive: env outcomes go to the ledger.
func (*Env) Expensive() {}

// Fingerprint implements pipeline.Fingerprinted.
func (s *Env) Fingerprint() string {
	fp := fmt.Sprintf("env/v2 build<=%s start<=%s teardown<=%s", s.MaxBuild, s.MaxStart, s.MaxTeardown)
	if s.Repeats > 1 {
		fp += fmt.Sprintf(" repeats=%d", s.Repeats)
	}
	return fp
}

// runnableTask returns the item as a task ready to run. The bundle the
// engine decoded is reused when it kept every file's content (the usual
// case: files up to 1 MiB, 4 MiB in all); otherwise the blob is decoded
// again keeping everything.
func runnableTask(it *pipeline.Item, lim bundle.Limits) (*trial.Task, error) {
	if it.Bundle != nil && it.Info != nil && len(it.Bundle.Truncated) == 0 {
		return &trial.Task{Path: it.Task.Path, Bundle: it.Bundle, Info: it.Info}, nil
	}
	return trial.LoadTask(it.Task.Path, it.Record.Blob, lim)
}
