package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/otcurate/otcurate/bundle"
)

// Label keys put on every container, network and image otcurate creates,
// so the janitor can find them after a crash.
const (
	LabelTool = "otcurate"      // value "1"
	LabelRun  = "otcurate.run"  // run id
	LabelTask = "otcurate.task" // task path
	LabelEnv  = "otcurate.env"  // environment hash
	LabelKind = "otcurate.kind" // "sandbox" | "build"
	// LabelOwner is "<hostname>:<pid>" of the creating process.
	LabelOwner = "otcurate.owner"
	// LabelLogDirs marks images built with /logs/{agent,verifier,artifacts}.
	LabelLogDirs = "otcurate.logdirs"
)

// LogDirs are created world-writable in every sandbox, as Harbor does, so
// a non-root agent or verifier can write there.
var LogDirs = []string{"logs/agent", "logs/verifier", "logs/artifacts"}

// Environment is what a task's environment/ directory defines.
type Environment struct {
	Hash         string         // content hash of environment/ (bundle.Bundle.EnvHash)
	Files        []bundle.Entry // the build context: environment/ members, names relative to it
	BuildTimeout time.Duration  // the task's build_timeout_sec
	Task         string         // task path, for labels and messages
	// Rebuild builds even when an image of this hash exists, without the
	// engine's layer cache (to measure a cold build; the naive baseline of
	// the cost benchmark).
	Rebuild bool
}

// Image is a built (or cached) environment image.
type Image struct {
	Ref      string        // image reference or ID usable by Start
	Cached   bool          // true when no build was needed
	Duration time.Duration // build time (0 when cached)
	Log      string        // tail of the build log
	Warnings []string      // e.g. base image mapped to a local stand-in
}

// Resources are the container limits, as task.toml states them (bounded
// at parse time, see bundle.MaxMemoryMB and friends). Zero means no limit.
//
// A CPU request above the host's (or node's) cores is the backend's to
// handle once, never an error retried as infrastructure: the Docker
// backend clamps it to the host's cores and reports a warning (Warner).
//
// StorageMB bounds what the task may write into its sandbox's filesystem.
// A backend enforces it natively where it can (Docker's storage quota on
// drivers that support it, Kubernetes' ephemeral-storage limit) and
// otherwise watches the writable layer and ends the sandbox when it grows
// past the bound, reporting a *LimitError through LimitWatcher.
type Resources struct {
	CPUs      float64
	MemoryMB  int64
	StorageMB int64
	PidsLimit int64
}

// DroppedCapabilities are the Linux capabilities removed from every
// sandbox, from Docker's default set: MKNOD (no device node a host-side
// read could open), NET_RAW (no raw sockets or packet spoofing) and
// SETFCAP (no file capabilities planted for later). What package installs,
// `su` and `useradd` in verifiers need stays (CHOWN, DAC_OVERRIDE, FOWNER,
// FSETID, SETUID, SETGID, KILL, AUDIT_WRITE, SYS_CHROOT, NET_BIND_SERVICE),
// and no process may gain privileges (no-new-privileges).
var DroppedCapabilities = []string{"MKNOD", "NET_RAW", "SETFCAP"}

// LimitError reports that a sandbox exceeded a limit of its task, seen
// from outside the container. It blames the task (or the agent), never the
// infrastructure, and is never retried.
type LimitError struct {
	Resource string // "storage"
	LimitMB  int64
	UsedMB   int64 // at the last measurement; 0 when not measured
}

func (e *LimitError) Error() string {
	if e.UsedMB <= 0 { // not measured here (a Kubernetes eviction)
		return fmt.Sprintf("the sandbox wrote past the task's %s limit of %d MB", e.Resource, e.LimitMB)
	}
	return fmt.Sprintf("the sandbox wrote %d MB, past the task's %s limit of %d MB", e.UsedMB, e.Resource, e.LimitMB)
}

// LimitWatcher is implemented by sandboxes that enforce a limit by
// watching (see Resources.StorageMB). LimitExceeded is nil while every
// limit holds; once a limit is exceeded the sandbox's processes are
// killed and its later operations fail.
type LimitWatcher interface {
	LimitExceeded() *LimitError
}

// Exceeded is sb's *LimitError, nil when sb watches no limit or every
// limit held.
func Exceeded(sb Sandbox) *LimitError {
	if w, ok := sb.(LimitWatcher); ok {
		return w.LimitExceeded()
	}
	return nil
}

// Warner is implemented by sandboxes that adjusted their StartSpec to
// the host (a CPU request clamped to the host's cores).
type Warner interface {
	Warnings() []string
}

// WarningsOf is sb's warnings, nil when it has none.
func WarningsOf(sb Sandbox) []string {
	if w, ok := sb.(Warner); ok {
		return w.Warnings()
	}
	return nil
}

// StartSpec describes a sandbox to start from an image.
type StartSpec struct {
	Image       Image
	Workdir     string            // overrides the image WORKDIR when set
	Env         map[string]string // container environment
	Network     bool              // false: no network at all
	Resources   Resources
	Labels      map[string]string // added to the otcurate labels
	Healthcheck *bundle.Healthcheck
}

// ExecRequest is one command run inside a sandbox with `bash -c`.
type ExecRequest struct {
	Cmd       string
	User      string // "" = image default
	Workdir   string // "" = sandbox workdir
	Env       map[string]string
	Timeout   time.Duration // 0 = no limit
	MaxOutput int           // bytes kept per stream (head and tail); 0 = 1 MiB
}

// ExecResult is the outcome of an exec. A timeout is a result, not an error.
type ExecResult struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	Truncated bool // output exceeded MaxOutput; the middle was dropped
	TimedOut  bool
	Duration  time.Duration
}

// Sandbox is a running environment.
type Sandbox interface {
	ID() string
	// Exec runs a command. The error is for infrastructure failures only.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// Upload copies files into dir (created if missing), owned by root,
	// modes kept.
	Upload(ctx context.Context, dir string, files []bundle.Entry) error
	// Download reads one regular file, at most max bytes. A missing file
	// is ErrNotFound.
	Download(ctx context.Context, path string, max int64) ([]byte, error)
	// OpenTerminal starts a long-lived interactive process on a
	// pseudo-terminal (what an agent types into). Stop closes every open
	// terminal.
	OpenTerminal(ctx context.Context, spec TerminalSpec) (Terminal, error)
	// Stop kills and removes the sandbox. It is idempotent and works even
	// when ctx is already cancelled.
	Stop(ctx context.Context) error

	// The verifier's isolation from the agent: what each backend
	// guarantees is documented on ShellIsolation.

	// KillAll kills every process in the sandbox that was not running
	// when Start returned: after it returns nil, nothing an agent started
	// (daemonised, forking, renamed or not) is alive, while the sandbox's
	// init, its main process and the services its entrypoint started
	// are. A sandbox whose main process is gone is a *ExitedError.
	KillAll(ctx context.Context) error
	// ReadFile reads the regular file at path without following a
	// symlink in any component and without opening anything that is not
	// a regular file (a FIFO or device is never opened): such a path is
	// ErrNotRegular, a missing one ErrNotFound. At most max bytes are
	// returned (max <= 0: DefaultMaxOutput): the first ones, or the last
	// ones when tail is set.
	ReadFile(ctx context.Context, path string, max int64, tail bool) ([]byte, error)
	// ResetDir removes whatever is at dir (a tree, file, symlink or
	// device: never followed), creates dir afresh with mode, owned by
	// root, failing if something reappears there, and writes files into
	// it like Upload. Parents of dir are created when missing, and
	// replaced by directories when they are not (a symlink, a file).
	ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error
	// NetAttempts is a counter of the sandbox's network attempts that
	// cannot work offline (a connection with no route, a name lookup
	// with no resolver); it only grows. ok is false when the backend
	// cannot observe it.
	NetAttempts(ctx context.Context) (n uint64, ok bool, err error)
}

// TerminalSpec describes an interactive process on a pseudo-terminal.
type TerminalSpec struct {
	Cmd     []string // e.g. bash --noediting -i
	User    string
	Workdir string
	Env     map[string]string
	Cols    int // default 160
	Rows    int // default 40
}

// DefaultShell is the interactive process of a terminal whose spec names
// none.
var DefaultShell = []string{"bash", "--noediting", "--noprofile", "--norc", "-i"}

// WithDefaults fills what the spec leaves unset: 160×40 and DefaultShell.
// Every backend's OpenTerminal starts from it.
func (s TerminalSpec) WithDefaults() TerminalSpec {
	if s.Cols <= 0 {
		s.Cols = 160
	}
	if s.Rows <= 0 {
		s.Rows = 40
	}
	if len(s.Cmd) == 0 {
		s.Cmd = DefaultShell
	}
	return s
}

// Terminal is the pseudo-terminal of an interactive process: writes are
// keystrokes, reads are what the terminal shows (raw bytes, echo
// included). Close hangs up (the shell exits; background processes it
// started live on until the sandbox stops).
type Terminal interface {
	io.ReadWriteCloser
}

// Backend builds images and starts sandboxes.
type Backend interface {
	// Build returns the image for an environment, building it at most once
	// per hash (concurrent callers wait for the same build).
	Build(ctx context.Context, env Environment) (Image, error)
	Start(ctx context.Context, spec StartSpec) (Sandbox, error)
	// GC removes what earlier runs left behind (by label).
	GC(ctx context.Context, opts GCOptions) (GCReport, error)
	Close() error
}

// GCOptions select what the janitor removes.
type GCOptions struct {
	Images    bool   // also remove otcurate-built images
	ExceptRun string // keep resources of this run id (the current one)
	Run       string // when set, remove only resources of this run id
	// OrphansOnly keeps what a live otcurate process on this host (or any
	// process on another host) owns: the automatic janitor at the start of
	// a run must not kill a concurrent run's sandboxes.
	OrphansOnly bool
}

// GCReport lists what was removed.
type GCReport struct {
	Containers []string
	Networks   []string
	Images     []string
}

// ErrNotFound is returned by Download for a missing file.
var ErrNotFound = errors.New("file not found in sandbox")

// ErrNotRegular is returned by ReadFile for a path that is not a regular
// file reached without symlinks (a directory, symlink, FIFO, socket or
// device).
var ErrNotRegular = errors.New("not a regular file")

// ExitedError is an error of a sandbox whose main process stopped while it
// was in use, with the engine answering: something inside the sandbox
// (the agent, the verifier, the memory limit) ended it, not the machine.
type ExitedError struct {
	ExitCode  int
	OOMKilled bool
	Err       error
}

func (e *ExitedError) Error() string {
	if e.OOMKilled {
		return fmt.Sprintf("the sandbox stopped: killed by the OOM killer (exit code %d)", e.ExitCode)
	}
	return fmt.Sprintf("the sandbox stopped: its main process exited with code %d", e.ExitCode)
}

func (e *ExitedError) Unwrap() error { return e.Err }

// TamperedError is an error of a sandbox whose own tools, the ones the
// backend must use to reach into it, misbehaved after code of the agent
// may have run in it: the image's mkdir or install that write the sandbox
// helper failed although they worked when the sandbox started, or the
// program run as the helper answered without the call's frame. Something
// inside the sandbox is at fault, not the machine: trials score the
// sandbox's remaining results 0, as for one whose main process stopped
// (ExitedError), so that breaking a tool never turns a failed attempt
// into an unscored one. Err is the misbehaviour; it is never an
// *InfraError.
type TamperedError struct{ Err error }

func (e *TamperedError) Error() string {
	return "a tool of the sandbox misbehaved after the agent ran: " + e.Err.Error()
}

func (e *TamperedError) Unwrap() error { return e.Err }

// BuildError is a task defect: the environment does not build.
type BuildError struct {
	Timeout bool
	Offline bool   // the failure looks like a missing network or registry
	Log     string // tail of the build log
	Err     error
}

func (e *BuildError) Error() string {
	what := "build failed"
	if e.Timeout {
		what = "build timed out"
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", what, e.Err)
	}
	return what
}

func (e *BuildError) Unwrap() error { return e.Err }

// HealthcheckError is a task defect found while starting a sandbox: the
// environment builds, but the sandbox never becomes ready. Either its
// [environment.healthcheck] command kept failing after start_period_sec
// (Retries counted failures), or the container itself stopped or could not
// run its entrypoint. Like a *BuildError it is recorded against the task
// and never retried.
type HealthcheckError struct {
	Command  string // the healthcheck command; "" when the container failed
	Attempts int    // checks run
	ExitCode int    // of the last check, or of the container when Exited
	TimedOut bool   // the last check exceeded timeout_sec
	Exited   bool   // the container stopped, or never started, instead
	Output   string // tail of the last check's output, or of the container log
	Err      error
}

func (e *HealthcheckError) Error() string {
	switch {
	case e.Exited && e.Err != nil:
		return fmt.Sprintf("environment unhealthy: container exited: %v", e.Err)
	case e.Err != nil:
		return fmt.Sprintf("environment unhealthy: %v", e.Err)
	case e.Exited:
		return fmt.Sprintf("environment unhealthy: container exited with code %d", e.ExitCode)
	case e.TimedOut:
		return fmt.Sprintf("environment unhealthy: healthcheck %q failed %d time(s), the last one timed out", e.Command, e.Attempts)
	}
	return fmt.Sprintf("environment unhealthy: healthcheck %q failed %d time(s), last exit code %d", e.Command, e.Attempts, e.ExitCode)
}

func (e *HealthcheckError) Unwrap() error { return e.Err }

// InfraError is a failure of the machine or engine, not of the task.
type InfraError struct {
	Kind string // engine_unavailable, out_of_disk, engine_error
	Err  error
}

func (e *InfraError) Error() string { return e.Kind + ": " + e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// IsInfra reports whether err is an infrastructure failure.
func IsInfra(err error) bool {
	var ie *InfraError
	return errors.As(err, &ie)
}

// EnginePinger is implemented by sandboxes that can tell whether the
// engine hosting them still answers (a fleet's sandbox: its own engine,
// not the fleet's others).
type EnginePinger interface {
	PingEngine(ctx context.Context) error
}

// PingEngine asks sb's engine whether it answers: nil when it does or when
// sb cannot tell.
func PingEngine(ctx context.Context, sb Sandbox) error {
	if p, ok := sb.(EnginePinger); ok {
		return p.PingEngine(ctx)
	}
	return nil
}
