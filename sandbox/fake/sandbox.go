package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// entrypointSettle is how long Start watches a sandbox whose image has an
// ENTRYPOINT (and no healthcheck) for an immediate exit.
const entrypointSettle = 300 * time.Millisecond

// fakeSandbox is one running sandbox.
type fakeSandbox struct {
	b   *Backend
	c   *container
	cfg imageConfig
	env []string // image ENV with the StartSpec's laid over it
	wd  string   // default workdir

	// baseline: the processes running when Start returned (KillAll
	// spares them); privateNetNS: the sandbox has a network namespace of
	// its own (NetAttempts can count its attempts).
	baseline     map[procID]bool
	mainProc     procID // the init's child: the entrypoint or sleep
	privateNetNS bool
	// workSnap: the work roots when Start returned (Work compares).
	workSnap sandbox.Snapshot

	mu        sync.Mutex
	stopped   bool
	terminals []*terminal
}

var _ sandbox.Sandbox = (*fakeSandbox)(nil)

// Start starts a sandbox from an image built by this backend (any Fake
// backend sharing its Dir): the image's ENTRYPOINT, if any, runs with
// `sleep infinity` as its arguments, /logs/{agent,verifier,artifacts}
// exist with mode 777, and the healthcheck (if any) has passed. On any
// failure nothing is left behind.
func (b *Backend) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	if spec.Image.Ref == "" {
		return nil, errors.New("start: no image")
	}
	img, err := b.loadImage(spec.Image.Ref)
	if err != nil {
		return nil, err
	}
	labels := make(map[string]string, len(spec.Labels)+4)
	maps.Copy(labels, spec.Labels)
	labels[sandbox.LabelTool] = "1"
	labels[sandbox.LabelKind] = "sandbox"
	labels[sandbox.LabelRun] = b.runID
	labels[sandbox.LabelOwner] = b.owner

	s := &fakeSandbox{b: b, cfg: img.cfg, env: mergeEnv(img.cfg.Env, spec.Env), wd: img.cfg.Workdir}
	if spec.Workdir != "" {
		s.wd = spec.Workdir
	}
	if s.wd == "" {
		s.wd = "/"
	}
	var mainArgv []string
	if len(img.cfg.Entrypoint) > 0 {
		mainArgv = s.entrypointArgv()
	}
	c, err := b.startContainer(ctx, containerSpec{kind: "sandbox", layers: []string{img.layer},
		network: spec.Network && !b.privateNet, labels: labels, mainArgv: mainArgv})
	if err != nil {
		return nil, err
	}
	s.c = c
	if err := b.track(s); err != nil {
		c.kill()
		_ = c.remove()
		return nil, err
	}
	s.privateNetNS = !spec.Network || b.privateNet
	if err := s.boot(ctx, spec); err != nil {
		_ = s.Stop(ctx)
		return nil, err
	}
	if err := s.recordBaseline(ctx); err != nil {
		_ = s.Stop(ctx)
		return nil, err
	}
	s.snapshotWork()
	b.log.Debug("sandbox started", "sandbox", c.id[:12], "image", spec.Image.Ref)
	return s, nil
}

// entrypointArgv runs the image's entrypoint as its user, in its workdir,
// with its environment, with `sleep infinity` as arguments (Harbor's
// command), from inside the root.
func (s *fakeSandbox) entrypointArgv() []string {
	argv := []string{"env", "-i"}
	argv = append(argv, withDefault(s.env, "PATH", defaultPath)...)
	if u := s.cfg.User; u != "" && u != "root" && u != "0" {
		argv = append(argv, sandbox.AsUserArgv(u)...)
	}
	argv = append(argv, "env", "-C", s.wd, "--")
	argv = append(argv, s.cfg.Entrypoint...)
	return append(argv, "sleep", "infinity")
}

// boot creates the workdir and waits for the sandbox to be ready.
func (s *fakeSandbox) boot(ctx context.Context, spec sandbox.StartSpec) error {
	if err := uploadIn(s.c, s.wd, nil, owner{}); err != nil {
		return infra("create workdir "+s.wd, err)
	}
	switch {
	case spec.Healthcheck != nil:
		return sandbox.WaitHealthy(ctx, spec.Healthcheck, s.Exec, s.pause, s.exitedError)
	case len(s.cfg.Entrypoint) > 0:
		return s.pause(ctx, entrypointSettle)
	}
	return nil
}

// pause waits for d, and fails early with the sandbox's exit.
func (s *fakeSandbox) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.c.exited:
		return s.exitedError(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exitedError is a *sandbox.HealthcheckError once the main process has
// exited, nil while it runs.
func (s *fakeSandbox) exitedError(context.Context) error {
	if s.c.alive() {
		return nil
	}
	he := &sandbox.HealthcheckError{Exited: true, ExitCode: s.c.exitCode, Output: s.c.logText()}
	switch code := s.c.exitCode; {
	case code == 126 || code == 127:
		he.Err = fmt.Errorf("the entrypoint could not run (exit code %d)", code)
	default:
		he.Err = fmt.Errorf("the entrypoint exited with code %d; it must keep running (exec \"$@\")", code)
	}
	return he
}

// ID is the sandbox's ID.
func (s *fakeSandbox) ID() string { return s.c.id }

func (s *fakeSandbox) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Exec runs req.Cmd with `bash -c` in the sandbox.
func (s *fakeSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if s.isStopped() {
		return sandbox.ExecResult{}, errStopped
	}
	start := time.Now()
	maxOut := req.MaxOutput
	if maxOut <= 0 {
		maxOut = sandbox.DefaultMaxOutput
	}
	stdout, stderr := sandbox.NewHeadTail(maxOut), sandbox.NewHeadTail(maxOut)
	code, timedOut, err := s.c.run(ctx, s.proc(req.User, req.Workdir, req.Env, []string{"bash", "-c", req.Cmd}), stdout, stderr, req.Timeout)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	return sandbox.ExecResult{
		ExitCode:  code,
		Stdout:    stdout.Bytes(),
		Stderr:    stderr.Bytes(),
		Truncated: stdout.Truncated() || stderr.Truncated(),
		TimedOut:  timedOut,
		Duration:  time.Since(start),
	}, nil
}

// proc fills the image's and sandbox's defaults into a process.
func (s *fakeSandbox) proc(user, workdir string, env map[string]string, argv []string) proc {
	if user == "" {
		user = s.cfg.User
	}
	if workdir == "" {
		workdir = s.wd
	}
	return proc{argv: argv, user: user, workdir: workdir, env: mergeEnv(s.env, env)}
}

// Upload copies files into dir (created if missing), owned by root, modes
// kept.
func (s *fakeSandbox) Upload(_ context.Context, dir string, files []bundle.Entry) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("upload: %q is not an absolute path", dir)
	}
	if s.isStopped() {
		return errStopped
	}
	if err := s.c.checkAlive(); err != nil {
		return err
	}
	if err := uploadIn(s.c, dir, files, owner{}); err != nil {
		return fmt.Errorf("upload to %s: %w", dir, err)
	}
	return nil
}

// Download reads the regular file at p (symlinks followed inside the
// sandbox), at most max bytes (max <= 0: sandbox.DefaultMaxOutput). A
// missing file is sandbox.ErrNotFound.
func (s *fakeSandbox) Download(_ context.Context, p string, max int64) ([]byte, error) {
	if max <= 0 {
		max = sandbox.DefaultMaxOutput
	}
	if s.isStopped() {
		return nil, errStopped
	}
	if err := s.c.checkAlive(); err != nil {
		return nil, err
	}
	data, err := readFileIn(s.c, p, max)
	if errors.Is(err, errNotFoundIn) {
		return nil, fmt.Errorf("download %s: %w", p, sandbox.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	return data, nil
}

// Stop kills every process of the sandbox (its PID namespace dies with its
// init) and removes its state. It is idempotent.
func (s *fakeSandbox) Stop(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	for _, t := range s.terminals {
		_ = t.Close()
	}
	s.terminals = nil
	killErr := s.c.kill()
	if err := s.c.remove(); err != nil {
		return infra("remove sandbox "+s.c.id[:12], err)
	}
	s.stopped = true
	s.b.untrack(s)
	if killErr != nil {
		return infra("stop sandbox "+s.c.id[:12], killErr)
	}
	return nil
}

// stateDirs lists the sandboxes' state directories.
func stateDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(sandboxesDir(dir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(sandboxesDir(dir), e.Name()))
		}
	}
	return out, nil
}
