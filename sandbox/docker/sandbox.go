package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// DefaultPidsLimit is the process limit of a sandbox whose Resources leave
// it unset.
const DefaultPidsLimit = 4096

// dockerSandbox is one running container.
type dockerSandbox struct {
	d  *Engine
	id string

	// direct reaches the container's files without the engine (nil:
	// through the engine).
	direct *directRoot

	mu        sync.Mutex
	stopped   bool
	terminals []*dockerTerminal // closed by Stop

	// exited is closed when the container's main process exits (watched
	// from before the start, so a fast exit is not missed).
	exited chan struct{}

	// What KillAll spares (isolation.go): the processes of the
	// container's cgroup when Start returned (direct mode), or their
	// sandbox.ShellSnapshot.
	cgroup        *cgroupDirs
	baseline      map[procID]bool
	mainProc      procID // the init's child: gone means the sandbox ends
	shellBaseline string

	workdir  string        // the sandbox's workdir (the spec's, else the image's)
	storage  *storageWatch // nil: no storage watchdog (none needed or the driver enforces a quota)
	warnings []string      // what Start adjusted to the host (Warner)
}

var _ sandbox.Sandbox = (*dockerSandbox)(nil)

// ID is the container ID.
func (s *dockerSandbox) ID() string { return s.id }

// Start creates and starts a container from spec.Image with Harbor's
// semantics: the command becomes `sleep infinity` while the image
// ENTRYPOINT is kept, /logs/{agent,verifier,artifacts} exist with mode 777,
// and the task's healthcheck (if any) has passed. On any failure the
// container is removed before Start returns.
func (d *Engine) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	if spec.Image.Ref == "" {
		return nil, errors.New("start: no image")
	}
	facts, err := d.imageFacts(ctx, spec.Image.Ref)
	if err != nil {
		return nil, err
	}
	hf := d.host()
	quota := hf.quota && !d.noQuota.Load()
	cfg, host, warnings := d.containerConfig(spec, hf, quota)
	created, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil && host.StorageOpt != nil && isQuotaRefusal(err) {
		// overlay2 over xfs without pquota: watch instead, from now on.
		d.log.Warn("the engine refused a storage quota; storage limits are watched instead", "err", err)
		d.noQuota.Store(true)
		quota = false
		host.StorageOpt = nil
		created, err = d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	}
	if err != nil {
		return nil, engineError(ctx, "create container from "+spec.Image.Ref, err)
	}
	for _, w := range created.Warnings {
		d.log.Warn("engine warning on create", "container", shortID(created.ID), "warning", w)
	}
	sb := &dockerSandbox{d: d, id: created.ID, exited: make(chan struct{}), warnings: warnings, workdir: facts.workdir}
	if spec.Workdir != "" {
		sb.workdir = spec.Workdir
	}
	if !quota && spec.Resources.StorageMB > 0 {
		sb.watchStorage(spec.Resources.StorageMB)
	}
	err = sb.boot(ctx, spec, facts)
	if err == nil {
		err = sb.recordBaseline(ctx)
	}
	if err != nil {
		if stopErr := sb.Stop(ctx); stopErr != nil {
			d.log.Warn("cannot remove a sandbox that failed to start", "container", shortID(sb.id), "err", stopErr)
		}
		return nil, err
	}
	d.log.Debug("sandbox started", "container", shortID(sb.id), "image", spec.Image.Ref)
	return sb, nil
}

// containerConfig translates a StartSpec on a host (hf); quota says
// whether the storage limit is a driver quota. spec.Labels are added to
// the otcurate labels but cannot override them (GC relies on them). Zero
// CPUs or memory mean no limit; the pids limit defaults to
// DefaultPidsLimit. sandbox.DroppedCapabilities are dropped and
// no-new-privileges is set. The warnings say what was adjusted to the
// host (applyLimits).
func (d *Engine) containerConfig(spec sandbox.StartSpec, hf hostFacts, quota bool) (*container.Config, *container.HostConfig, []string) {
	labels := make(map[string]string, len(spec.Labels)+3)
	maps.Copy(labels, spec.Labels)
	labels[sandbox.LabelTool] = "1"
	labels[sandbox.LabelKind] = "sandbox"
	labels[sandbox.LabelRun] = d.runID
	labels[sandbox.LabelOwner] = sandbox.OwnerID()

	cfg := &container.Config{
		Image:      spec.Image.Ref,
		Cmd:        []string{"sleep", "infinity"}, // Entrypoint left nil: the image's is kept
		Env:        sandbox.EnvList(spec.Env),
		WorkingDir: spec.Workdir,
		Labels:     labels,
	}
	pids := spec.Resources.PidsLimit
	if pids <= 0 {
		pids = DefaultPidsLimit
	}
	initProc := true
	host := &container.HostConfig{
		Init:        &initProc, // reap zombies of the agent's processes
		SecurityOpt: []string{"no-new-privileges"},
		CapDrop:     sandbox.DroppedCapabilities,
		Resources:   container.Resources{PidsLimit: &pids},
	}
	warnings := applyLimits(&hf, spec.Resources, quota, host)
	if !spec.Network {
		host.NetworkMode = "none"
		// Also disabled in the config: the engine then skips the network
		// prestart hook (a re-exec of the dockerd binary per container,
		// about a third of a start's CPU on a small host).
		cfg.NetworkDisabled = true
	}
	return cfg, host, warnings
}

// entrypointSettle is how long Start watches a container whose image has
// an ENTRYPOINT (and no healthcheck) for an immediate exit: a missing or
// failing entrypoint dies within milliseconds on an idle host, but a
// loaded 2-core machine (CI running test packages in parallel) was seen to
// take more than 250 ms.
const entrypointSettle = time.Second

// directRoot returns the container's directRoot when its init process is
// visible in this host's /proc (same PID namespace as the engine), else nil.
func (s *dockerSandbox) directRoot(ctx context.Context) *directRoot {
	res, err := s.d.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil || res.Container.State.Pid <= 0 {
		return nil
	}
	r := &directRoot{pid: res.Container.State.Pid, id: s.id}
	fd, err := r.open()
	if err != nil {
		s.d.log.Debug("container files not reachable through /proc; using the engine", "container", shortID(s.id))
		return nil
	}
	unix.Close(fd)
	return r
}

// imageFacts is what Start needs to know of an image.
type imageFacts struct {
	entrypoint bool   // the image has an ENTRYPOINT
	workdir    string // the image's WORKDIR
	logDirs    bool   // /logs/{agent,verifier,artifacts} are baked in (LabelLogDirs)
}

// imageFacts inspects an image.
func (d *Engine) imageFacts(ctx context.Context, ref string) (imageFacts, error) {
	res, err := d.cli.ImageInspect(ctx, ref)
	if err != nil {
		return imageFacts{}, engineError(ctx, "inspect image "+ref, err)
	}
	if res.Config == nil {
		return imageFacts{}, nil
	}
	return imageFacts{entrypoint: len(res.Config.Entrypoint) > 0, logDirs: res.Config.Labels[sandbox.LabelLogDirs] == "1",
		workdir: res.Config.WorkingDir}, nil
}

// imageEntrypoint reports whether the image has an ENTRYPOINT.
func (d *Engine) imageEntrypoint(ctx context.Context, ref string) (bool, error) {
	f, err := d.imageFacts(ctx, ref)
	return f.entrypoint, err
}

// boot brings a created container to a usable state.
func (s *dockerSandbox) boot(ctx context.Context, spec sandbox.StartSpec, facts imageFacts) error {
	// An engine copy costs about as much as a container start: images
	// built here have the directories already.
	if !facts.logDirs {
		if err := s.makeLogDirs(ctx); err != nil {
			return err
		}
	}
	if err := s.watchExit(); err != nil {
		return err
	}
	if _, err := s.d.cli.ContainerStart(ctx, s.id, client.ContainerStartOptions{}); err != nil {
		if isEntrypointFailure(err) {
			return &sandbox.HealthcheckError{Exited: true, ExitCode: -1, Output: err.Error(), Err: err}
		}
		return engineError(ctx, "start container", err)
	}
	if s.d.direct() {
		s.direct = s.directRoot(ctx)
	}
	switch {
	case spec.Healthcheck != nil:
		return s.waitHealthy(ctx, spec.Healthcheck)
	case facts.entrypoint:
		if err := s.pause(ctx, entrypointSettle); err != nil {
			return err
		}
	}
	return nil
}

// watchExit registers a wait for the container's next exit and closes
// s.exited when it comes. The wait lives until the container exits or is
// removed, or the backend is closed.
func (s *dockerSandbox) watchExit() error {
	w := s.d.cli.ContainerWait(s.d.ctx, s.id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	select {
	case err := <-w.Error: // the request itself failed
		return engineError(s.d.ctx, "wait for container", err)
	default:
	}
	s.d.bg.Add(1)
	go func() {
		defer s.d.bg.Done()
		select {
		case <-w.Result:
			close(s.exited)
		case err := <-w.Error:
			if s.d.ctx.Err() == nil && !s.isStopped() {
				s.d.log.Debug("container wait ended", "container", shortID(s.id), "err", err)
			}
		}
	}()
	return nil
}

// pause waits for d, and fails early with the container's exit.
func (s *dockerSandbox) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.exited:
		return s.exitedError(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// isEntrypointFailure reports a start error caused by the image: its
// entrypoint is missing, not executable or for another architecture.
func isEntrypointFailure(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, `exec: "`) || strings.Contains(msg, "exec format error") ||
		strings.Contains(msg, "executable file not found")
}

// makeLogDirs creates /logs/{agent,verifier,artifacts} with mode 777 as
// root, before the container starts, with one archive upload (no exec and
// no shell needed). /logs itself is created 0755 if missing, left alone
// otherwise.
func (s *dockerSandbox) makeLogDirs(ctx context.Context) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range sandbox.LogDirs {
		hdr := &tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o777, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := s.d.cli.CopyToContainer(ctx, s.id, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf})
	return engineError(ctx, "create /logs directories", err)
}

// exitedError returns a *HealthcheckError when the container is no longer
// running, nil when it is.
func (s *dockerSandbox) exitedError(ctx context.Context) error {
	res, err := s.d.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{})
	if err != nil {
		return engineError(ctx, "inspect container", err)
	}
	st := res.Container.State
	if st == nil || st.Running {
		return nil
	}
	he := &sandbox.HealthcheckError{Exited: true, ExitCode: st.ExitCode, Output: s.logTail(ctx)}
	switch {
	case st.OOMKilled:
		he.Err = fmt.Errorf("killed by the OOM killer (exit code %d)", st.ExitCode)
	case st.Error != "":
		he.Err = errors.New(st.Error)
	case st.ExitCode == 126 || st.ExitCode == 127:
		he.Err = fmt.Errorf("the entrypoint could not run (exit code %d)", st.ExitCode)
	default:
		he.Err = fmt.Errorf("the entrypoint exited with code %d; it must keep running (exec \"$@\")", st.ExitCode)
	}
	return he
}

// logTail is the end of the container's own output (its entrypoint's).
func (s *dockerSandbox) logTail(ctx context.Context) string {
	rc, err := s.d.cli.ContainerLogs(ctx, s.id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "50"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	out := sandbox.NewTail(buildLogMax)
	_, _ = stdcopy.StdCopy(out, out, io.LimitReader(rc, 1<<20))
	return out.String()
}

// waitHealthy polls the healthcheck command as root with Harbor's
// semantics: checks every start_interval_sec during start_period_sec, where
// failures do not count, then every interval_sec; `retries` counted
// failures make the environment unhealthy; each check is limited to
// timeout_sec.
func (s *dockerSandbox) waitHealthy(ctx context.Context, hc *bundle.Healthcheck) error {
	return sandbox.WaitHealthy(ctx, hc, s.Exec, s.pause, s.exitedError)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
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

// Stop force-removes the container (SIGKILL, then removal with its anonymous
// volumes) on a context detached from ctx's cancellation, so it works
// after a cancel. A second Stop is a no-op.
func (s *dockerSandbox) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopWatch()
	for _, t := range s.terminals {
		t.att.Close() // the container's removal kills its processes
	}
	s.terminals = nil
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := removeContainer(cctx, s.d.cli, s.id); err != nil {
		return infraError("remove sandbox "+shortID(s.id), err)
	}
	s.stopped = true
	return nil
}

// removeContainer force-removes a container; a missing one is fine, and a
// removal already in progress is waited for.
func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	for {
		_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !strings.Contains(err.Error(), "already in progress") {
			return err
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the removal of %s: %w", shortID(id), err)
		}
	}
}
