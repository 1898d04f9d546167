package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/sandbox"
)

// Options configure an Engine.
type Options struct {
	Host   string // engine endpoint: unix://, tcp:// (TLS from DOCKER_CERT_PATH, DOCKER_TLS_VERIFY) or ssh://[user@]host[:port]; "" = DOCKER_HOST or the default socket
	RunID  string // label value for everything this process creates
	Logger *slog.Logger
	// EngineFiles sends every upload and download through the engine's
	// archive API, even when the faster direct path is available (see
	// directRoot).
	EngineFiles bool
}

// Engine is the sandbox.Backend on one Docker Engine, driven through its Go API
// (github.com/moby/moby/client). It works with engines as old as API 1.41
// (Debian's docker.io 20.10) and uses the classic builder.
type Engine struct {
	cli   *client.Client
	runID string
	log   *slog.Logger

	ctx    context.Context // cancelled by Close: stops builds and background cleanups
	cancel context.CancelFunc
	bg     sync.WaitGroup // background cleanups (exec kills after a cancel)

	mu     sync.Mutex
	builds map[string]*buildCall // in-flight builds by image tag

	images sync.Map // environment hashes whose image this process saw on the engine

	// direct reports whether sandboxes' files can be reached through
	// /proc (directRoot); decided at the first sandbox start, so backends
	// that never start one (gc, builds) ask the engine nothing more.
	direct func() bool

	// host is what `docker info` says of the engine's host (CPUs, storage
	// driver), asked once at the first sandbox start; noQuota is set when
	// the engine refused a storage quota its driver was expected to take.
	host    func() hostFacts
	noQuota atomic.Bool
}

var _ sandbox.Backend = (*Engine)(nil)

// Timeouts of the engine calls that must finish even when the caller's
// context is gone.
const (
	pingTimeout    = 10 * time.Second
	cleanupTimeout = 30 * time.Second
)

// New connects to the engine and negotiates the API version. When no
// engine answers it fails fast with an *InfraError of kind
// engine_unavailable.
func New(ctx context.Context, opts Options) (*Engine, error) {
	clientOpts := []client.Opt{client.FromEnv}
	switch {
	case strings.HasPrefix(opts.Host, "ssh://"):
		sshOpts, err := sshOptions(opts.Host)
		if err != nil {
			return nil, err
		}
		clientOpts = append(clientOpts, sshOpts...)
	case opts.Host != "":
		clientOpts = append(clientOpts, client.WithHost(opts.Host))
	}
	cli, err := client.New(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		host := cli.DaemonHost()
		_ = cli.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &sandbox.InfraError{Kind: "engine_unavailable", Err: fmt.Errorf(
			"no Docker engine answers at %s (is dockerd running? scripts/setup-docker.sh starts one): %w", host, err)}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dctx, dcancel := context.WithCancel(context.Background())
	d := &Engine{
		cli:    cli,
		runID:  opts.RunID,
		log:    log.With("backend", "docker"),
		ctx:    dctx,
		cancel: dcancel,
		builds: make(map[string]*buildCall),
	}
	d.host = sync.OnceValue(d.loadHostFacts)
	d.direct = func() bool { return false }
	if !opts.EngineFiles {
		d.direct = sync.OnceValue(func() bool { return d.directFiles(d.ctx) })
	}
	d.log.Debug("engine connected", "host", cli.DaemonHost(), "api", cli.ClientVersion())
	return d, nil
}

// directFiles reports whether containers' files can be reached through
// /proc: the engine listens on a local socket, runs containers without
// user-namespace remapping (their root is this host's root), and this
// process is root. Each sandbox still checks that the engine shares this
// host's PID namespace before using it.
func (d *Engine) directFiles(ctx context.Context) bool {
	if os.Geteuid() != 0 || !strings.HasPrefix(d.cli.DaemonHost(), "unix://") {
		return false
	}
	info, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return false
	}
	for _, o := range info.Info.SecurityOptions {
		if strings.Contains(o, "userns") || strings.Contains(o, "rootless") {
			return false
		}
	}
	return true
}

// APIVersion is the negotiated Engine API version.
func (d *Engine) APIVersion() string { return d.cli.ClientVersion() }

// Close cancels in-flight builds, waits for background cleanups and closes
// the connection. Sandboxes still running are not stopped.
func (d *Engine) Close() error {
	d.cancel()
	d.bg.Wait()
	return d.cli.Close()
}

// cleanupContext is a context for a call that must run even when ctx is
// cancelled (teardown), bounded by cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// engineError turns an error of an engine call into the error returned to
// callers: the caller's own cancellation stays a context error, anything
// else is an *InfraError.
func engineError(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return infraError(op, err)
}

// Ping checks that the engine answers.
func (d *Engine) Ping(ctx context.Context) error {
	if _, err := d.cli.Ping(ctx, client.PingOptions{}); err != nil {
		return engineError(ctx, "ping", err)
	}
	return nil
}

// hasImage reports whether this process already built or found the
// environment's image on the engine (no engine call).
func (d *Engine) hasImage(hash string) bool {
	_, ok := d.images.Load(hash)
	return ok
}

// infraError classifies an engine failure.
func infraError(op string, err error) *sandbox.InfraError {
	kind := "engine_error"
	switch {
	case isOutOfDisk(err.Error()):
		kind = "out_of_disk"
	case isConnectionError(err):
		kind = "engine_unavailable"
	}
	return &sandbox.InfraError{Kind: kind, Err: fmt.Errorf("%s: %w", op, err)}
}

func isOutOfDisk(msg string) bool {
	return strings.Contains(strings.ToLower(msg), "no space left on device")
}

// isConnectionError reports whether err means the engine did not answer or
// dropped the connection.
func isConnectionError(err error) bool {
	if client.IsErrConnectionFailed(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"Cannot connect to the Docker daemon", "connection refused",
		"connection reset", "broken pipe", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// isNoSuchContainer reports a missing container (as opposed to a missing
// path inside one, which is also a 404).
func isNoSuchContainer(err error) bool {
	return cerrdefs.IsNotFound(err) && strings.Contains(err.Error(), "No such container")
}

// labelFilter is a list filter matching every object with label key=value.
func labelFilter(key, value string) client.Filters {
	return make(client.Filters).Add("label", key+"="+value)
}

// shortID is the 12-character form of an engine ID.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
