package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/otcurate/otcurate/bundle"
)

// ShellIsolation implements the verifier-isolation methods of Sandbox
// (KillAll, ReadFile, ResetDir, NetAttempts) for a backend that can reach
// a sandbox only by running commands in it: Kubernetes, Daytona, and
// Docker through an engine on another host.
//
// What each mode guarantees:
//
// Docker with the engine on this host (the direct mode, see directRoot):
// KillAll freezes the container's cgroup, kills from the host every
// process that was not there when Start returned (through a pidfd, after
// checking the process's start time, so a reused pid is never signalled)
// and thaws, until none is left, so a process that forks continuously
// cannot outrun it. ReadFile and ResetDir work below /proc/PID/root with
// openat2 (no symlink followed; a non-regular file is only ever opened
// O_PATH and fstat'ed, never read). NetAttempts reads counters of the
// container's network namespace: unroutable packets and UDP datagrams to
// a closed local port (a name lookup without a resolver). No program of the image
// runs for any of it. Remaining gap: code the agent injects (ptrace) into
// a process that was already running when Start returned survives.
//
// Kubernetes and Daytona with the sandbox helper (package sandbox/helper,
// cmd/otcurate-sandbox-helper; found beside the otcurate executable or
// through $OTCURATE_SANDBOX_HELPER): a static Go binary is put into a
// fresh directory with a random name (mode 0700) and run by absolute path
// as argv, with no shell; KillAll always puts a new copy, so does any
// call after an Exec or a terminal (code of the agent may have run), and
// each copy removes the previous one. Every call of the helper first
// kills every process outside the baseline (pidfd, start time checked
// after the pidfd is open, each pass stopping every victim before killing
// any, until a pass finds none), then reads without following a symlink
// (component by component, O_NOFOLLOW; a non-regular file only lstat'ed,
// its type reported) or resets (removal without following links,
// exclusive creates, the files written by the helper itself, no tar). Its
// answer is the last line of its output, framed with a nonce chosen per
// call, written once no process of the agent is left. On Daytona the copy
// goes in through the toolbox's file API and runs through its execute
// call, which execs the words itself: no program of the image is
// involved. On Kubernetes the copy is written by the image's mkdir and
// install (the bytes through the exec's stdin): an agent that replaced
// those two can still substitute the helper. Since the helper's snapshot
// at Start shows they work before any code of the agent runs, an agent
// that merely broke them, or made them write a program that does not
// answer with the call's frame, gets a *TamperedError (scored 0), not an
// infrastructure failure. Remaining gaps of both: an
// agent process alive when KillAll starts can race the fresh copy (find
// the new directory, swap the binary before it runs); Daytona's Exec
// itself (hence test.sh) goes through the image's sh, base64 and bash,
// so an agent that broke those leaves no reward (a task-side outcome,
// never a forged one); code injected (ptrace) into a baseline process
// survives. The fix without any image tool on Kubernetes, not built: an
// ephemeral container (targetContainerName, the pod's shared PID
// namespace) from a tiny image holding the helper, reaching the sandbox
// container's files through /proc/PID/root, with capabilities the
// sandbox container lacks so that the agent cannot ptrace it or reach its
// root.
//
// ShellIsolation (remote Docker engines, and Kubernetes and Daytona
// without the helper) does the same with bash and the coreutils of the
// image, run as root. It stops a background process but not an agent
// that replaced bash, rm, head or tail in the image: a fake head forges a
// reward. NetAttempts is not observable on any of these (ok false).
//
// In every mode test.sh itself runs through the image's bash and the
// tools it calls (python3, pytest): in the agent's sandbox (the shared
// verifier mode), an agent that replaced those can still influence the
// verdict. The separate verifier mode (see WorkPath and
// trial.VerifierSandbox) runs test.sh in a fresh sandbox holding only the
// agent's work, where those tools are the image's own.
type ShellIsolation struct {
	// SB runs the commands (its Exec and Upload).
	SB Sandbox
	// Baseline is the process list taken by ShellSnapshot when the
	// sandbox started: those processes survive KillAll.
	Baseline string
}

// shellSnapshot prints "PID:STARTTIME" for every process, bash builtins
// only.
const shellSnapshot = `for d in /proc/[0-9]*; do st=; read -r st 2>/dev/null < "$d/stat" || continue; read -r -a f <<< "${st##*) }"; printf '%s:%s\n' "${d##*/}" "${f[19]}"; done`

// shellKillAll kills every process but PID 1, itself, its ancestors (the
// backend's exec wrappers) and the baseline ($1): stopped first, then
// killed, pass after pass, until none is left.
const shellKillAll = `base=" $1 "; self=$$; spare=" 1 "
p=$self
while [ -n "$p" ] && [ "$p" != 0 ]; do
  spare+="$p "; st=; read -r st 2>/dev/null < "/proc/$p/stat" || break
  read -r -a f <<< "${st##*) }"; p=${f[1]}
done
for ((pass = 0; pass < 20; pass++)); do
  victims=()
  for d in /proc/[0-9]*; do
    p=${d##*/}
    case "$spare" in *" $p "*) continue;; esac
    st=; read -r st 2>/dev/null < "$d/stat" || continue
    read -r -a f <<< "${st##*) }"
    [ "${f[0]}" = Z ] && continue
    case "$base" in *" $p:${f[19]} "*) continue;; esac
    victims+=("$p")
  done
  [ ${#victims[@]} -eq 0 ] && exit 0
  kill -STOP "${victims[@]}" 2>/dev/null
  kill -KILL "${victims[@]}" 2>/dev/null
  sleep 0.05
done
exit 1`

// ShellSnapshot lists the sandbox's processes (for ShellIsolation.Baseline).
func ShellSnapshot(ctx context.Context, sb Sandbox) (string, error) {
	res, err := sb.Exec(ctx, ExecRequest{Cmd: shellSnapshot, User: "root", Timeout: time.Minute})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// KillAll implements Sandbox.KillAll with a bash loop over /proc.
func (i ShellIsolation) KillAll(ctx context.Context) error {
	res, err := i.SB.Exec(ctx, ExecRequest{Cmd: "set -- " + ShellQuote(strings.Join(strings.Fields(i.Baseline), " ")) + "\n" + shellKillAll,
		User: "root", Timeout: time.Minute})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("kill the agent's processes: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// readCheck exits 3 when $1 is missing, 4 when a component is a symlink
// or the file is not regular.
const readCheck = `p=; for c in $(printf '%s' "$1" | tr '/' ' '); do p="$p/$c"; [ -L "$p" ] && exit 4; [ -e "$p" ] || exit 3; done; [ -f "$1" ] || exit 4
if [ "$2" = tail ]; then tail -c "$3" -- "$1"; else head -c "$3" -- "$1"; fi`

// ReadFile implements Sandbox.ReadFile with test, head and tail.
func (i ShellIsolation) ReadFile(ctx context.Context, p string, max int64, tail bool) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxOutput
	}
	mode := "head"
	if tail {
		mode = "tail"
	}
	cmd := "set -- " + ShellQuote(path.Clean(p)) + " " + mode + " " + strconv.FormatInt(max, 10) + "\n" + readCheck
	res, err := i.SB.Exec(ctx, ExecRequest{Cmd: cmd, User: "root", Timeout: time.Minute, MaxOutput: int(max)})
	if err != nil {
		return nil, err
	}
	switch res.ExitCode {
	case 0:
		return res.Stdout, nil
	case 3:
		return nil, fmt.Errorf("read %s: %w", p, ErrNotFound)
	case 4:
		return nil, fmt.Errorf("read %s: %w", p, ErrNotRegular)
	}
	return nil, fmt.Errorf("read %s: exit %d: %s", p, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
}

// ResetDir implements Sandbox.ResetDir with rm and mkdir, then Upload.
func (i ShellIsolation) ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error {
	if !path.IsAbs(dir) || path.Clean(dir) == "/" {
		return fmt.Errorf("reset %q: not an absolute directory below /", dir)
	}
	// Parents that are not directories (a symlink, a file) are replaced.
	cmd := fmt.Sprintf(`p=; for c in $(dirname -- %[1]s | tr '/' ' '); do p="$p/$c"; if [ -L "$p" ] || { [ -e "$p" ] && [ ! -d "$p" ]; }; then rm -f -- "$p"; fi; [ -d "$p" ] || mkdir -m 755 -- "$p" || exit 1; done
rm -rf -- %[1]s && mkdir -m %#[2]o -- %[1]s && chmod %#[2]o -- %[1]s`, ShellQuote(path.Clean(dir)), mode.Perm())
	res, err := i.SB.Exec(ctx, ExecRequest{Cmd: cmd, User: "root", Timeout: time.Minute})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("reset %s: exit %d: %s", dir, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if len(files) == 0 {
		return nil
	}
	return i.SB.Upload(ctx, dir, files)
}

// NetAttempts implements Sandbox.NetAttempts: not observable here.
func (ShellIsolation) NetAttempts(context.Context) (uint64, bool, error) { return 0, false, nil }

// IsExited reports whether err says the sandbox's main process stopped
// (an *ExitedError).
func IsExited(err error) bool {
	var ee *ExitedError
	return errors.As(err, &ee)
}

// IsTampered reports whether err says a tool of the sandbox misbehaved
// after the agent ran (a *TamperedError).
func IsTampered(err error) bool {
	var te *TamperedError
	return errors.As(err, &te)
}

// EndedInside reports whether err says something inside the sandbox ended
// its use (IsExited or IsTampered): the attempt is scored 0, never
// retried as an infrastructure failure.
func EndedInside(err error) bool { return IsExited(err) || IsTampered(err) }
