package daytona

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/helper"
)

// The verifier-isolation methods. This backend can reach a sandbox only
// through the toolbox daemon, so they run the static sandbox helper
// (Options.Helper; see sandbox.ShellIsolation for what that guarantees):
// uploaded through the toolbox's file API (the daemon writes the bytes
// itself, no program of the image runs) into a fresh directory with an
// unpredictable name, made 0700, the binary 0700, through the same API,
// and run by absolute path through /process/execute, which execs the
// command's words without a shell. KillAll always uploads a fresh copy,
// so does any call after an Exec or a terminal (code of the agent may
// have run); every upload removes the previous one. Without a helper they
// are sandbox.ShellIsolation's.

// snapshot lists the processes running when Start returns (the image is
// as built then: its bash is the image's own); a failure leaves KillAll
// sparing only PID 1.
func (s *daytonaSandbox) snapshot(ctx context.Context) string {
	snap, err := sandbox.ShellSnapshot(ctx, s)
	if err != nil {
		s.b.log.Warn("cannot list the sandbox's processes; KillAll will spare only PID 1", "sandbox", s.id, "err", err)
	}
	return snap
}

func (s *daytonaSandbox) shell() sandbox.ShellIsolation {
	return sandbox.ShellIsolation{SB: s, Baseline: s.baseline}
}

func (s *daytonaSandbox) helper() helper.Isolation {
	return helper.Isolation{Run: s.runHelper, Baseline: s.baseline}
}

// Warnings implements sandbox.Warner: a sandbox without the helper says so.
func (s *daytonaSandbox) Warnings() []string {
	if s.b.o.Helper != nil {
		return nil
	}
	return []string{"verifier isolation through the image's bash and coreutils (no sandbox helper: " + s.b.o.HelperMissing + ")"}
}

// KillAll implements sandbox.Sandbox.
func (s *daytonaSandbox) KillAll(ctx context.Context) error {
	if s.b.o.Helper == nil {
		return s.shell().KillAll(ctx)
	}
	return s.helper().KillAll(ctx)
}

// ReadFile implements sandbox.Sandbox.
func (s *daytonaSandbox) ReadFile(ctx context.Context, path string, max int64, tail bool) ([]byte, error) {
	if s.b.o.Helper == nil {
		return s.shell().ReadFile(ctx, path, max, tail)
	}
	return s.helper().ReadFile(ctx, path, max, tail)
}

// ResetDir implements sandbox.Sandbox.
func (s *daytonaSandbox) ResetDir(ctx context.Context, dir string, mode fs.FileMode, files []bundle.Entry) error {
	if s.b.o.Helper == nil {
		return s.shell().ResetDir(ctx, dir, mode, files)
	}
	return s.helper().ResetDir(ctx, dir, mode, files)
}

// NetAttempts implements sandbox.Sandbox: not observable here.
func (s *daytonaSandbox) NetAttempts(ctx context.Context) (uint64, bool, error) {
	return s.shell().NetAttempts(ctx)
}

// runHelper is the helper.Runner of this backend (see above).
func (s *daytonaSandbox) runHelper(ctx context.Context, args []string, input []byte, fresh bool) ([]byte, error) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	type file struct {
		path string
		data []byte
	}
	var files []file
	dir, old := s.hdir, ""
	install := fresh || dir == "" || s.dirty.Load()
	if install {
		old, dir = dir, helper.Dir()
		q := url.Values{"path": {dir}, "mode": {"0700"}}
		if _, err := s.b.call(ctx, http.MethodPost, s.toolbox+"/files/folder?"+q.Encode(), nil, "", nil); err != nil {
			return nil, fmt.Errorf("upload the sandbox helper: %w", err)
		}
		files = append(files, file{dir + "/h", s.b.o.Helper.Data})
	}
	if input != nil {
		files = append(files, file{dir + "/in", input})
		args = append(args, "-in", dir+"/in")
	}
	if len(files) > 0 {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for i, f := range files {
			mw.WriteField(fmt.Sprintf("files[%d].path", i), f.path) // the path part must precede its file part
			fw, err := mw.CreateFormFile(fmt.Sprintf("files[%d].file", i), f.path)
			if err != nil {
				return nil, err
			}
			fw.Write(f.data)
		}
		mw.Close()
		if _, err := s.b.call(ctx, http.MethodPost, s.toolbox+"/files/bulk-upload", body.Bytes(), mw.FormDataContentType(), nil); err != nil {
			return nil, fmt.Errorf("upload the sandbox helper: %w", err)
		}
	}
	if install {
		q := url.Values{"path": {dir + "/h"}, "mode": {"0700"}, "owner": {"root"}, "group": {"root"}}
		if _, err := s.b.call(ctx, http.MethodPost, s.toolbox+"/files/permissions?"+q.Encode(), nil, "", nil); err != nil {
			return nil, fmt.Errorf("make the sandbox helper executable: %w", err)
		}
		s.hdir = dir
		s.dirty.Store(false)
		if old != "" {
			args = append(args, "-rm", old)
		}
	}
	// Daytona's sandboxes are containers: PID 1 is not the host's.
	args = append(args, "-any-pidns")
	words := []string{dir + "/h"}
	words = append(words, args...)
	cmd, err := commandLine(words)
	if err != nil {
		return nil, err
	}
	var out struct {
		ExitCode *int   `json:"exitCode"`
		Code     *int   `json:"code"`
		Result   string `json:"result"`
	}
	// 2 minutes: the helper's kill passes give up after 30 s.
	if _, err := s.b.call(ctx, http.MethodPost, s.toolbox+"/process/execute",
		jsonBody(map[string]any{"command": cmd, "timeout": 120}), "application/json", &out); err != nil {
		return nil, fmt.Errorf("run the sandbox helper: %w", err)
	}
	return []byte(out.Result), nil
}

// commandLine joins words for the daemon, which splits on spaces and
// honours '…' and "…" (no escapes).
func commandLine(words []string) (string, error) {
	q := make([]string, len(words))
	for i, w := range words {
		switch {
		case w != "" && !strings.ContainsAny(w, " '\"\t\n"):
			q[i] = w
		case !strings.Contains(w, "'"):
			q[i] = "'" + w + "'"
		case !strings.Contains(w, `"`):
			q[i] = `"` + w + `"`
		default:
			return "", errors.New("run the sandbox helper: an argument holds both quote characters: " + w)
		}
	}
	return strings.Join(q, " "), nil
}
