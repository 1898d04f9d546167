// Package helper is the host side of the sandbox helper
// (cmd/otcurate-sandbox-helper, package sandbox/helper/op): it finds the
// static binary for a sandbox's architecture and implements the
// verifier-isolation methods of sandbox.Sandbox (KillAll, ReadFile,
// ResetDir) by running it, for backends that can reach a sandbox only by
// running commands in it. How the binary gets into the sandbox and is run
// (by absolute path, never through the image's shell) is the backend's
// Runner; what each backend then guarantees is documented on
// sandbox.ShellIsolation.
package helper

import (
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/helper/op"
)

// EnvVar names the setting that points at the helper: a binary, or a
// directory holding otcurate-sandbox-helper-linux-<arch>.
const EnvVar = "OTCURATE_SANDBOX_HELPER"

// FileName is the helper's file name for a GOARCH, as make build writes
// it next to bin/otcurate.
func FileName(arch string) string { return "otcurate-sandbox-helper-linux-" + arch }

// Binary is the helper for one architecture.
type Binary struct {
	Arch string
	Path string // where it was found
	Data []byte
}

// Find returns the helper for arch (a GOARCH: amd64, arm64). env is the
// value of OTCURATE_SANDBOX_HELPER: when set, it is the only place looked
// at (a binary, or a directory holding FileName(arch)); when empty, the
// directory of this program's executable is. The file must be a static
// Linux ELF executable for arch.
func Find(env, arch string) (*Binary, error) {
	var p string
	switch {
	case env != "":
		st, err := os.Stat(env)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvVar, err)
		}
		p = env
		if st.IsDir() {
			p = filepath.Join(env, FileName(arch))
		}
	default:
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the sandbox helper: %w", err)
		}
		p = filepath.Join(filepath.Dir(exe), FileName(arch))
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("find the sandbox helper: %w (make build writes it next to bin/otcurate; or set %s)", err, EnvVar)
	}
	if err := checkELF(data, arch); err != nil {
		return nil, fmt.Errorf("sandbox helper %s: %w", p, err)
	}
	return &Binary{Arch: arch, Path: p, Data: data}, nil
}

var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386,
	"arm": elf.EM_ARM, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV}

// checkELF accepts a static Linux executable for arch.
func checkELF(data []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if want, ok := machines[arch]; !ok || f.Machine != want {
		return fmt.Errorf("built for %s, the sandbox is %s", f.Machine, arch)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("not an executable (%s)", f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked: it would load the image's libraries (build with CGO_ENABLED=0)")
		}
	}
	return nil
}

// Runner runs the helper once in a sandbox, by absolute path and without
// a shell: args follow the helper's path (the nonce first). input, when
// not nil, is the entries of a reset; the Runner hands it over and adds
// the -in flag. It returns the command's whole output (stdout; stderr may
// be mixed in). fresh asks for a copy of the helper uploaded anew (the
// caller knows code of the agent may have run since the last one).
type Runner func(ctx context.Context, args []string, input []byte, fresh bool) ([]byte, error)

// Isolation implements KillAll, ReadFile and ResetDir with the helper.
// Every call first kills every process outside Baseline (so nothing the
// agent started writes into the answer or into a file being read); the
// answer is the last line of the output, framed with a nonce chosen per
// call.
type Isolation struct {
	Run Runner
	// Baseline lists the processes that survive (PID:STARTTIME, what
	// sandbox.ShellSnapshot printed when the sandbox started).
	Baseline string
	// Failed, when set, sees every failure of a call (the Runner's error,
	// an answer without the call's frame, wrapping op.ErrNoFrame) before
	// it is returned: a backend that writes the helper with the image's
	// tools turns one into a *sandbox.TamperedError once code of the agent
	// may have run.
	Failed func(error) error
}

func nonce() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// call runs one operation and returns its status and payload.
func (i Isolation) call(ctx context.Context, opName string, input []byte, fresh bool, args ...string) (op.Status, []byte, error) {
	n := nonce()
	argv := []string{n, opName}
	if base := strings.Join(strings.Fields(i.Baseline), ","); base != "" {
		// Never an empty word: Daytona's daemon may drop it.
		argv = append(argv, "-base", base)
	}
	argv = append(argv, args...)
	out, err := i.Run(ctx, argv, input, fresh)
	if err == nil {
		var st op.Status
		var payload []byte
		if st, payload, err = op.ParseFrame(out, n); err == nil {
			return st, payload, nil
		}
		err = fmt.Errorf("sandbox helper %s: %w", opName, err)
	}
	if i.Failed != nil {
		err = i.Failed(err)
	}
	return "", nil, err
}

// Snapshot lists the sandbox's live processes (PID:STARTTIME, one a line:
// a Baseline) with a freshly uploaded helper. A backend takes it when the
// sandbox starts, before any code of the agent: it shows, too, that the
// helper can be put into this sandbox and run.
func (i Isolation) Snapshot(ctx context.Context) (string, error) {
	st, payload, err := i.call(ctx, "snapshot", nil, true)
	if err != nil {
		return "", fmt.Errorf("list the sandbox's processes: %w", err)
	}
	if st != op.OK {
		return "", fmt.Errorf("list the sandbox's processes: %s", payload)
	}
	return strings.TrimSpace(string(payload)), nil
}

// KillAll implements sandbox.Sandbox.KillAll with a freshly uploaded helper.
func (i Isolation) KillAll(ctx context.Context) error {
	st, payload, err := i.call(ctx, "kill", nil, true)
	if err != nil {
		return fmt.Errorf("kill the agent's processes: %w", err)
	}
	if st != op.OK {
		return fmt.Errorf("kill the agent's processes: %s", payload)
	}
	return nil
}

// ReadFile implements sandbox.Sandbox.ReadFile.
func (i Isolation) ReadFile(ctx context.Context, p string, max int64, tail bool) ([]byte, error) {
	if max <= 0 {
		max = sandbox.DefaultMaxOutput
	}
	args := []string{"-path", path.Clean(p), "-max", strconv.FormatInt(max, 10)}
	if tail {
		args = append(args, "-tail")
	}
	st, payload, err := i.call(ctx, "read", nil, false, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	switch st {
	case op.OK:
		if int64(len(payload)) > max {
			return nil, fmt.Errorf("read %s: the helper returned %d bytes, over %d", p, len(payload), max)
		}
		return payload, nil
	case op.NotFound:
		return nil, fmt.Errorf("read %s: %w", p, sandbox.ErrNotFound)
	case op.NotRegular:
		return nil, fmt.Errorf("read %s: %s: %w", p, payload, sandbox.ErrNotRegular)
	}
	return nil, fmt.Errorf("read %s: %s", p, payload)
}

// ResetDir implements sandbox.Sandbox.ResetDir: the files go to the
// helper, which writes them itself (no tar of the image).
func (i Isolation) ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error {
	if !path.IsAbs(dir) || path.Clean(dir) == "/" {
		return fmt.Errorf("reset %q: not an absolute directory below /", dir)
	}
	var input []byte
	if len(files) > 0 {
		var err error
		if input, err = Entries(files); err != nil {
			return fmt.Errorf("reset %s: %w", dir, err)
		}
	}
	st, payload, err := i.call(ctx, "reset", input, false, "-dir", path.Clean(dir), "-mode", strconv.FormatUint(uint64(mode.Perm()), 8))
	if err != nil {
		return fmt.Errorf("reset %s: %w", dir, err)
	}
	if st != op.OK {
		return fmt.Errorf("reset %s: %s", dir, payload)
	}
	return nil
}

// Entries encodes bundle entries for the helper's reset.
func Entries(files []bundle.Entry) ([]byte, error) {
	var list []op.Entry
	for _, e := range files {
		oe := op.Entry{Kind: byte(e.Kind), Mode: uint32(e.Mode.Perm()), Name: strings.TrimSuffix(e.Name, "/"), Link: e.Linkname, Data: e.Data}
		switch e.Kind {
		case bundle.KindFile:
			if e.Data == nil && e.Open != nil {
				rc, err := e.Open()
				if err != nil {
					return nil, fmt.Errorf("%s: %w", e.Name, err)
				}
				oe.Data, err = io.ReadAll(rc)
				rc.Close()
				if err != nil {
					return nil, fmt.Errorf("%s: %w", e.Name, err)
				}
			}
		case bundle.KindDir, bundle.KindSymlink, bundle.KindHardlink:
		default:
			return nil, fmt.Errorf("%s: unsupported kind %v", e.Name, e.Kind)
		}
		list = append(list, oe)
	}
	var buf bytes.Buffer
	if err := op.WriteEntries(&buf, list); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Dir returns a fresh, unpredictable directory name for one upload of
// the helper, at the top of the sandbox's filesystem (where /tmp's noexec
// cannot apply).
func Dir() string { return "/.otcurate-helper-" + nonce() }
