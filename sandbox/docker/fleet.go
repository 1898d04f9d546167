package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// FleetEngine is one Docker engine of a fleet and how many sandboxes it
// may run at once.
type FleetEngine struct {
	Host     string // unix://, tcp:// (TLS from DOCKER_CERT_PATH/DOCKER_TLS_VERIFY) or "" for the default
	Capacity int    // concurrent sandboxes; default 4
}

// ParseFleet reads a comma-separated engine list, each HOST or
// HOST=CAPACITY, e.g. "unix:///var/run/docker.sock=8,tcp://10.0.0.2:2376=16".
func ParseFleet(spec string) ([]FleetEngine, error) {
	var out []FleetEngine
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		e := FleetEngine{Host: part, Capacity: 4}
		if i := strings.LastIndex(part, "="); i > 0 {
			n, err := strconv.Atoi(part[i+1:])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("engine %q: capacity must be a positive number", part)
			}
			e.Host, e.Capacity = part[:i], n
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, errors.New("no Docker engine given")
	}
	return out, nil
}

// Fleet is a Backend over several Docker engines. Each sandbox goes to the
// least-loaded engine that is up and below its capacity (Start waits when
// all are full). An environment's image is built on an engine only when a
// sandbox of it is placed there, once per engine (each engine's own cache
// and single-flight). An engine whose calls fail with a connection error is
// taken out of rotation (and probed again after a cool-down); the failure
// reaches the caller as an InfraError, which the trial runner retries — on
// another engine — and never records against the task.
type Fleet struct {
	engines []*fleetEngine
	log     *slog.Logger

	mu    sync.Mutex
	freed chan struct{} // signalled when a slot frees or an engine returns
	envs  map[string]sandbox.Environment
}

type fleetEngine struct {
	host     string
	d        *Engine
	capacity int
	inUse    int
	downTill time.Time
	started  int // sandboxes placed here, for reports and tests
}

// CoolDown is how long an engine that failed stays out of rotation.
const CoolDown = 30 * time.Second

// NewFleet connects to every engine. Engines that do not answer at start
// are an error: a fleet is configured, not discovered.
func NewFleet(ctx context.Context, engines []FleetEngine, runID string, logger *slog.Logger) (*Fleet, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &Fleet{log: logger, freed: make(chan struct{}, 1), envs: map[string]sandbox.Environment{}}
	for _, e := range engines {
		d, err := New(ctx, Options{Host: e.Host, RunID: runID, Logger: logger.With("engine", e.Host)})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("fleet engine %s: %w", e.Host, err)
		}
		capacity := e.Capacity
		if capacity <= 0 {
			capacity = 4
		}
		f.engines = append(f.engines, &fleetEngine{host: e.Host, d: d, capacity: capacity})
	}
	return f, nil
}

// Build implements Backend: it builds the image on the least-loaded engine
// that is up (classifying build defects once) and remembers the
// environment, so Start can build it on whichever engine it picks.
func (f *Fleet) Build(ctx context.Context, env sandbox.Environment) (sandbox.Image, error) {
	for {
		e, err := f.pick(ctx, "", false)
		if err != nil {
			return sandbox.Image{}, err
		}
		img, err := e.d.Build(ctx, env)
		if f.failed(e, err) {
			continue // that engine is gone: build elsewhere
		}
		if err == nil {
			f.mu.Lock()
			f.envs[img.Ref] = env
			f.mu.Unlock()
		}
		return img, err
	}
}

// Start implements Backend: it places the sandbox on the least-loaded
// engine with a free slot, preferring one that has the image at equal
// load, and builds the image there first when needed.
func (f *Fleet) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	f.mu.Lock()
	env, known := f.envs[spec.Image.Ref]
	f.mu.Unlock()
	if !known {
		return nil, fmt.Errorf("fleet: image %s was not built through this fleet", spec.Image.Ref)
	}
	e, err := f.pick(ctx, env.Hash, true)
	if err != nil {
		return nil, err
	}
	release := func() { f.release(e) }
	img, err := e.d.Build(ctx, env) // cached on this engine after the first time
	if err != nil {
		f.failed(e, err)
		release()
		return nil, err
	}
	spec.Image = img
	sb, err := e.d.Start(ctx, spec)
	if err != nil {
		f.failed(e, err)
		release()
		return nil, err
	}
	f.mu.Lock()
	e.started++
	f.mu.Unlock()
	return &fleetSandbox{Sandbox: sb, f: f, e: e, release: sync.OnceFunc(release)}, nil
}

// pick reserves (slot) or just chooses the best engine: up, below
// capacity, least loaded; ties go to an engine holding the image, then to
// the first listed. It waits for a free slot, and fails only when every
// engine is down.
func (f *Fleet) pick(ctx context.Context, hash string, slot bool) (*fleetEngine, error) {
	for {
		f.mu.Lock()
		now := time.Now()
		var best *fleetEngine
		var bestHas bool
		up := 0
		for _, e := range f.engines {
			if now.Before(e.downTill) {
				continue
			}
			up++
			if slot && e.inUse >= e.capacity {
				continue
			}
			has := hash != "" && e.d.hasImage(hash)
			load := float64(e.inUse) / float64(e.capacity)
			if best == nil {
				best, bestHas = e, has
				continue
			}
			bl := float64(best.inUse) / float64(best.capacity)
			if load < bl || (load == bl && has && !bestHas) {
				best, bestHas = e, has
			}
		}
		if best != nil {
			if slot {
				best.inUse++
			}
			f.mu.Unlock()
			return best, nil
		}
		f.mu.Unlock()
		if up == 0 {
			// Every engine is cooling down: wait for the first to return.
			wait := CoolDown
			f.mu.Lock()
			for _, e := range f.engines {
				wait = min(wait, time.Until(e.downTill))
			}
			f.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(max(wait, 10*time.Millisecond)):
			}
			if f.allDown() {
				return nil, &sandbox.InfraError{Kind: "engine_unavailable", Err: errors.New("every engine of the fleet is down")}
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-f.freed:
		case <-time.After(time.Second):
		}
	}
}

// allDown probes the engines whose cool-down ended; it reports whether
// none answers.
func (f *Fleet) allDown() bool {
	for _, e := range f.engines {
		ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
		err := e.d.Ping(ctx)
		cancel()
		f.mu.Lock()
		if err == nil {
			e.downTill = time.Time{}
			f.mu.Unlock()
			return false
		}
		e.downTill = time.Now().Add(CoolDown)
		f.mu.Unlock()
	}
	return true
}

func (f *Fleet) release(e *fleetEngine) {
	f.mu.Lock()
	e.inUse--
	f.mu.Unlock()
	select {
	case f.freed <- struct{}{}:
	default:
	}
}

// failed takes an engine out of rotation when err says it is unreachable,
// and reports whether it did.
func (f *Fleet) failed(e *fleetEngine, err error) bool {
	var ie *sandbox.InfraError
	if !errors.As(err, &ie) || ie.Kind != "engine_unavailable" {
		return false
	}
	f.mu.Lock()
	e.downTill = time.Now().Add(CoolDown)
	f.mu.Unlock()
	f.log.Warn("engine unavailable: out of rotation", "engine", e.host, "for", CoolDown, "err", err)
	return true
}

// Placements returns how many sandboxes each engine has started.
func (f *Fleet) Placements() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for _, e := range f.engines {
		out[e.host] = e.started
	}
	return out
}

// GC implements Backend on every engine that answers.
func (f *Fleet) GC(ctx context.Context, opts sandbox.GCOptions) (sandbox.GCReport, error) {
	var all sandbox.GCReport
	var errs []error
	for _, e := range f.engines {
		rep, err := e.d.GC(ctx, opts)
		all.Containers = append(all.Containers, rep.Containers...)
		all.Networks = append(all.Networks, rep.Networks...)
		all.Images = append(all.Images, rep.Images...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.host, err))
		}
	}
	return all, errors.Join(errs...)
}

// Close implements Backend.
func (f *Fleet) Close() error {
	var errs []error
	for _, e := range f.engines {
		errs = append(errs, e.d.Close())
	}
	return errors.Join(errs...)
}

// fleetSandbox frees its engine slot when stopped and reports engine loss.
type fleetSandbox struct {
	sandbox.Sandbox
	f       *Fleet
	e       *fleetEngine
	release func()
}

func (s *fleetSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	r, err := s.Sandbox.Exec(ctx, req)
	s.f.failed(s.e, err)
	return r, err
}

func (s *fleetSandbox) Upload(ctx context.Context, dir string, files []bundle.Entry) error {
	err := s.Sandbox.Upload(ctx, dir, files)
	s.f.failed(s.e, err)
	return err
}

func (s *fleetSandbox) Download(ctx context.Context, path string, max int64) ([]byte, error) {
	b, err := s.Sandbox.Download(ctx, path, max)
	s.f.failed(s.e, err)
	return b, err
}

func (s *fleetSandbox) OpenTerminal(ctx context.Context, spec sandbox.TerminalSpec) (sandbox.Terminal, error) {
	t, err := s.Sandbox.OpenTerminal(ctx, spec)
	s.f.failed(s.e, err)
	return t, err
}

func (s *fleetSandbox) KillAll(ctx context.Context) error {
	err := s.Sandbox.KillAll(ctx)
	s.f.failed(s.e, err)
	return err
}

func (s *fleetSandbox) ReadFile(ctx context.Context, path string, max int64, tail bool) ([]byte, error) {
	b, err := s.Sandbox.ReadFile(ctx, path, max, tail)
	s.f.failed(s.e, err)
	return b, err
}

func (s *fleetSandbox) ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error {
	err := s.Sandbox.ResetDir(ctx, dir, mode, files)
	s.f.failed(s.e, err)
	return err
}

func (s *fleetSandbox) NetAttempts(ctx context.Context) (uint64, bool, error) {
	n, ok, err := s.Sandbox.NetAttempts(ctx)
	s.f.failed(s.e, err)
	return n, ok, err
}

func (s *fleetSandbox) Stop(ctx context.Context) error {
	defer s.release()
	return s.Sandbox.Stop(ctx)
}

// LimitExceeded implements sandbox.LimitWatcher for the engine's sandbox.
func (s *fleetSandbox) LimitExceeded() *sandbox.LimitError { return sandbox.Exceeded(s.Sandbox) }

// Warnings implements sandbox.Warner for the engine's sandbox.
func (s *fleetSandbox) Warnings() []string { return sandbox.WarningsOf(s.Sandbox) }

var _ sandbox.Backend = (*Fleet)(nil)
