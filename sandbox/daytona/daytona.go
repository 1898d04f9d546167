// Package daytona is a sandbox.Backend on the Daytona API, the hosted
// sandbox service the reference pipeline ran on: snapshots (one per
// environment hash, reused) built from the task's Dockerfile, sandboxes
// created from them, commands and files through the toolbox API, and
// deletion. Rate limits (429), capacity and quota errors and server errors
// are retried with backoff and, when they persist, reported as
// sandbox.InfraError: never as task defects. The wire format is documented
// in docs/daytona-api.md.
package daytona

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/helper"
)

// Options configure the backend.
type Options struct {
	APIURL string // DAYTONA_API_URL; default https://app.daytona.io/api
	APIKey string // DAYTONA_API_KEY
	Target string // region, e.g. "us" (optional)
	RunID  string // label value for everything this process creates
	Logger *slog.Logger
	HTTP   *http.Client
	// Retries of a call that hit a rate limit, a capacity error or a
	// server error (default 6), starting at Backoff (default 1 s, doubled,
	// at most 60 s; a Retry-After header wins).
	Retries int
	Backoff time.Duration
	// CPUs, MemoryGB and DiskGB size the snapshots (Daytona takes
	// resources on the snapshot, not on sandboxes created from one).
	CPUs, MemoryGB, DiskGB int
	// Helper is the static sandbox helper for the sandboxes' architecture
	// (amd64: Daytona's). Nil: the verifier-isolation methods run the
	// image's bash and coreutils (sandbox.ShellIsolation); New warns and
	// every sandbox carries a warning. HelperMissing says why it is nil.
	Helper        *helper.Binary
	HelperMissing string
}

// Backend is the Daytona sandbox.Backend.
type Backend struct {
	o   Options
	log *slog.Logger
}

var _ sandbox.Backend = (*Backend)(nil)

// New checks the options and the credentials (one authenticated call).
func New(ctx context.Context, o Options) (*Backend, error) {
	if o.APIURL == "" {
		o.APIURL = "https://app.daytona.io/api"
	}
	o.APIURL = strings.TrimRight(o.APIURL, "/")
	if o.APIKey == "" {
		return nil, errors.New("daytona: no API key (DAYTONA_API_KEY)")
	}
	if o.HTTP == nil {
		o.HTTP = &http.Client{Timeout: 10 * time.Minute}
	}
	if o.Retries <= 0 {
		o.Retries = 6
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Backend{o: o, log: o.Logger.With("backend", "daytona")}
	if o.Helper == nil {
		b.log.Warn("no sandbox helper: the verifier's isolation runs the image's bash and coreutils, which an agent can replace ("+
			helper.EnvVar+"; see otcurate help sandbox)", "reason", o.HelperMissing)
	}
	labels, _ := json.Marshal(map[string]string{sandbox.LabelTool: "1", sandbox.LabelRun: "__probe__"})
	if _, err := b.call(ctx, http.MethodGet, b.o.APIURL+"/sandbox?labels="+url.QueryEscape(string(labels)), nil, "", nil); err != nil {
		return nil, fmt.Errorf("daytona: %w", err)
	}
	return b, nil
}

// --- HTTP ----------------------------------------------------------------

// apiError is an error response of the API or the toolbox.
type apiError struct {
	Status  int
	Message string
	Retry   time.Duration // from Retry-After[-throttler]
}

func (e *apiError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message) }

// transient: rate limits, capacity and quota (they clear as sandboxes are
// deleted), server errors.
func (e *apiError) transient() bool {
	m := strings.ToLower(e.Message)
	return e.Status == http.StatusTooManyRequests || e.Status >= 500 ||
		strings.Contains(m, "limit exceeded") || strings.Contains(m, "no available runners") ||
		strings.Contains(m, "quota")
}

// call sends one request, retrying transient failures; out, when set,
// receives the JSON body.
func (b *Backend) call(ctx context.Context, method, u string, body []byte, contentType string, out any) ([]byte, error) {
	delay := b.o.Backoff
	for attempt := 0; ; attempt++ {
		data, err := b.once(ctx, method, u, body, contentType)
		if err == nil {
			if out != nil && len(data) > 0 {
				if err := json.Unmarshal(data, out); err != nil {
					return nil, &sandbox.InfraError{Kind: "engine_error", Err: fmt.Errorf("%s %s: malformed response: %w", method, u, err)}
				}
			}
			return data, nil
		}
		var ae *apiError
		retry := errors.As(err, &ae) && ae.transient()
		if !errors.As(err, &ae) && ctx.Err() == nil { // network error
			retry = true
		}
		if !retry || attempt >= b.o.Retries || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if retry || !errors.As(err, &ae) {
				kind := "engine_unavailable"
				if ae != nil && ae.Status < 500 {
					kind = "capacity"
				}
				return nil, &sandbox.InfraError{Kind: kind, Err: fmt.Errorf("%s %s: %w", method, u, err)}
			}
			return nil, err
		}
		wait := delay
		if ae != nil && ae.Retry > 0 {
			wait = ae.Retry
		}
		wait += time.Duration(rand.Int64N(int64(wait)/4 + 1))
		b.log.Info("retrying", "call", method+" "+u, "in", wait.Round(time.Millisecond), "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		delay = min(2*delay, 60*time.Second)
	}
}

func (b *Backend) once(ctx context.Context, method, u string, body []byte, contentType string) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.o.APIKey)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := b.o.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return data, nil
	}
	ae := &apiError{Status: resp.StatusCode, Message: strings.TrimSpace(string(data))}
	var eb struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(data, &eb) == nil {
		switch m := eb.Message.(type) {
		case string:
			ae.Message = m
		case []any:
			ae.Message = fmt.Sprint(m...)
		default:
			if eb.Error != "" {
				ae.Message = eb.Error
			}
		}
	}
	for k, v := range resp.Header {
		if strings.HasPrefix(strings.ToLower(k), "retry-after") && len(v) > 0 {
			if s, err := strconv.Atoi(v[0]); err == nil {
				ae.Retry = max(ae.Retry, time.Duration(s)*time.Second)
			}
		}
	}
	return nil, ae
}

func jsonBody(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

// --- snapshots (Build) ---------------------------------------------------

type buildInfo struct {
	DockerfileContent string   `json:"dockerfileContent"`
	ContextHashes     []string `json:"contextHashes,omitempty"`
}

type snapshotDTO struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	State       string `json:"state"`
	ErrorReason string `json:"errorReason"`
}

// SnapshotName is the snapshot of an environment hash.
func SnapshotName(hash string) string {
	if len(hash) > 16 {
		hash = hash[:16]
	}
	return "otcurate-env-" + hash
}

// Build implements sandbox.Backend: the environment's snapshot, reused
// when it is active, else created from the Dockerfile and waited for.
func (b *Backend) Build(ctx context.Context, env sandbox.Environment) (sandbox.Image, error) {
	var dockerfile []byte
	for _, f := range env.Files {
		switch {
		case f.Name == "Dockerfile" && f.Kind == bundle.KindFile:
			dockerfile = f.Data
		case f.Kind == bundle.KindFile:
			// Build contexts are uploaded to Daytona's object storage
			// (contextHashes); not built yet. Not the task's fault.
			return sandbox.Image{}, &sandbox.InfraError{Kind: "backend_unsupported",
				Err: fmt.Errorf("environment/%s: the daytona backend builds Dockerfile-only environments (no build context upload yet)", f.Name)}
		}
	}
	if dockerfile == nil {
		return sandbox.Image{}, &sandbox.BuildError{Err: errors.New("environment/ has no Dockerfile")}
	}
	name := SnapshotName(env.Hash)
	start := time.Now()
	ctx2 := ctx
	if env.BuildTimeout > 0 {
		var cancel context.CancelFunc
		ctx2, cancel = context.WithTimeout(ctx, env.BuildTimeout)
		defer cancel()
	}
	var snap snapshotDTO
	_, err := b.call(ctx2, http.MethodGet, b.o.APIURL+"/snapshots/"+url.PathEscape(name), nil, "", &snap)
	var ae *apiError
	switch {
	case err == nil && snap.State == "active" && !env.Rebuild:
		return sandbox.Image{Ref: name, Cached: true}, nil
	case err == nil && (snap.State == "error" || snap.State == "build_failed") && !env.Rebuild:
		return sandbox.Image{}, &sandbox.BuildError{Log: snap.ErrorReason, Err: fmt.Errorf("snapshot %s: %s", name, snap.ErrorReason)}
	case err == nil && env.Rebuild:
		if _, err := b.call(ctx2, http.MethodDelete, b.o.APIURL+"/snapshots/"+url.PathEscape(snap.ID), nil, "", nil); err != nil {
			return sandbox.Image{}, err
		}
		fallthrough
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		req := map[string]any{"name": name, "buildInfo": buildInfo{DockerfileContent: string(dockerfile)}}
		if b.o.CPUs > 0 {
			req["cpu"] = b.o.CPUs
		}
		if b.o.MemoryGB > 0 {
			req["memory"] = b.o.MemoryGB
		}
		if b.o.DiskGB > 0 {
			req["disk"] = b.o.DiskGB
		}
		if _, err := b.call(ctx2, http.MethodPost, b.o.APIURL+"/snapshots", jsonBody(req), "application/json", &snap); err != nil {
			return sandbox.Image{}, b.buildErr(ctx, ctx2, env, err)
		}
	case err != nil:
		return sandbox.Image{}, b.buildErr(ctx, ctx2, env, err)
	}
	// Wait for it (the SDKs poll every second).
	for snap.State != "active" {
		if snap.State == "error" || snap.State == "build_failed" {
			return sandbox.Image{}, &sandbox.BuildError{Offline: false, Log: snap.ErrorReason, Err: fmt.Errorf("snapshot %s: %s", name, snap.ErrorReason)}
		}
		select {
		case <-ctx2.Done():
			return sandbox.Image{}, b.buildErr(ctx, ctx2, env, ctx2.Err())
		case <-time.After(time.Second):
		}
		if _, err := b.call(ctx2, http.MethodGet, b.o.APIURL+"/snapshots/"+url.PathEscape(name), nil, "", &snap); err != nil {
			return sandbox.Image{}, b.buildErr(ctx, ctx2, env, err)
		}
	}
	return sandbox.Image{Ref: name, Duration: time.Since(start)}, nil
}

func (b *Backend) buildErr(parent, ctx context.Context, env sandbox.Environment, err error) error {
	switch {
	case parent.Err() != nil:
		return parent.Err()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &sandbox.BuildError{Timeout: true, Err: fmt.Errorf("no active snapshot after %s (build_timeout_sec)", env.BuildTimeout)}
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusBadRequest && !ae.transient() {
		return &sandbox.BuildError{Log: ae.Message, Err: err} // the API rejected the Dockerfile
	}
	return err
}

// --- sandboxes (Start) ---------------------------------------------------

type sandboxDTO struct {
	ID              string            `json:"id"`
	State           string            `json:"state"`
	ErrorReason     string            `json:"errorReason"`
	ToolboxProxyURL string            `json:"toolboxProxyUrl"`
	Labels          map[string]string `json:"labels"`
}

// Start implements sandbox.Backend.
func (b *Backend) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	labels := map[string]string{sandbox.LabelTool: "1", sandbox.LabelRun: b.o.RunID, sandbox.LabelKind: "sandbox", sandbox.LabelOwner: sandbox.OwnerID()}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	req := map[string]any{"snapshot": spec.Image.Ref, "labels": labels, "env": spec.Env,
		"networkBlockAll": !spec.Network, "public": false, "autoStopInterval": 0, "autoDeleteInterval": -1}
	if b.o.Target != "" {
		req["target"] = b.o.Target
	}
	var sb sandboxDTO
	if _, err := b.call(ctx, http.MethodPost, b.o.APIURL+"/sandbox", jsonBody(req), "application/json", &sb); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && strings.HasPrefix(ae.Message, "Sandbox failed to start") {
			return nil, &sandbox.InfraError{Kind: "engine_error", Err: err}
		}
		return nil, err
	}
	s := &daytonaSandbox{b: b, id: sb.ID, workdir: spec.Workdir, toolbox: strings.TrimRight(sb.ToolboxProxyURL, "/") + "/" + sb.ID}
	for sb.State != "started" {
		if sb.State == "error" || sb.State == "build_failed" {
			s.Stop(ctx)
			return nil, &sandbox.InfraError{Kind: "engine_error", Err: fmt.Errorf("sandbox %s: %s: %s", sb.ID, sb.State, sb.ErrorReason)}
		}
		select {
		case <-ctx.Done():
			s.Stop(ctx)
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := b.call(ctx, http.MethodGet, b.o.APIURL+"/sandbox/"+sb.ID, nil, "", &sb); err != nil {
			s.Stop(ctx)
			return nil, err
		}
	}
	if hc := spec.Healthcheck; hc != nil && hc.Command != "" {
		if err := s.waitHealthy(ctx, hc); err != nil {
			s.Stop(ctx)
			return nil, err
		}
	}
	s.baseline = s.snapshot(ctx)
	return s, nil
}

// waitHealthy runs the healthcheck with the shared semantics
// (sandbox.WaitHealthy). The API reports no exit of the sandbox's main
// process, so only the checks themselves decide.
func (s *daytonaSandbox) waitHealthy(ctx context.Context, hc *bundle.Healthcheck) error {
	pause := func(ctx context.Context, d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}
	return sandbox.WaitHealthy(ctx, hc, s.Exec, pause, func(context.Context) error { return nil })
}

type daytonaSandbox struct {
	b       *Backend
	id      string
	workdir string
	toolbox string

	baseline string // the processes KillAll spares (sandbox.ShellSnapshot)

	// The helper's current upload (see helperRun); dirty is set by every
	// Exec and terminal: code of the agent may have run since.
	hmu   sync.Mutex
	hdir  string
	dirty atomic.Bool
}

func (s *daytonaSandbox) ID() string { return s.id }

// Exec implements sandbox.Sandbox. The toolbox runs argv without a shell
// and has no environment field: the command goes base64-encoded through
// `sh -c`, with exports and an optional `su` for the user (what the SDKs
// do). stdout and stderr come back combined, in Stdout.
func (s *daytonaSandbox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	s.dirty.Store(true)
	var script strings.Builder
	for k, v := range req.Env {
		fmt.Fprintf(&script, "export %s=\"$(echo %s | base64 -d)\"\n", k, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	script.WriteString(req.Cmd)
	shell := "bash"
	switch argv := sandbox.AsUserArgv(req.User); {
	case len(argv) == 0: // root
	case argv[0] == "setpriv": // uid[:gid], which su does not take: plain words
		shell = strings.Join(argv, " ") + " bash"
	default:
		shell = "su -s /bin/bash " + req.User
	}
	inner := "echo " + base64.StdEncoding.EncodeToString([]byte(script.String())) + " | base64 -d | " + shell
	body := map[string]any{"command": "sh -c '" + inner + "'"}
	cwd := req.Workdir
	if cwd == "" {
		cwd = s.workdir
	}
	if cwd != "" {
		body["cwd"] = cwd
	}
	if req.Timeout > 0 {
		body["timeout"] = int((req.Timeout + time.Second - 1) / time.Second)
	}
	start := time.Now()
	var out struct {
		ExitCode *int   `json:"exitCode"`
		Code     *int   `json:"code"` // older daemons
		Result   string `json:"result"`
	}
	_, err := s.b.call(ctx, http.MethodPost, s.toolbox+"/process/execute", jsonBody(body), "application/json", &out)
	res := sandbox.ExecResult{Duration: time.Since(start)}
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusRequestTimeout {
		res.TimedOut, res.ExitCode = true, -1
		return res, nil
	}
	if err != nil {
		return res, err
	}
	switch {
	case out.ExitCode != nil:
		res.ExitCode = *out.ExitCode
	case out.Code != nil:
		res.ExitCode = *out.Code
	}
	limit := req.MaxOutput
	if limit <= 0 {
		limit = 1 << 20
	}
	kept := sandbox.NewHeadTail(limit) // head and tail, like the other backends
	kept.Write([]byte(out.Result))
	res.Stdout, res.Truncated = kept.Bytes(), kept.Truncated()
	return res, nil
}

// Upload implements sandbox.Sandbox: the files go as one gzip tar (modes,
// directories and links kept) and are unpacked by tar in the sandbox.
func (s *daytonaSandbox) Upload(ctx context.Context, dir string, files []bundle.Entry) error {
	var tgz bytes.Buffer
	if err := bundle.Encode(&tgz, files); err != nil {
		return err
	}
	tmp := fmt.Sprintf("/tmp/.otcurate-upload-%d.tgz", rand.Int64())
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("files[0].path", tmp) // the path part must precede its file part
	fw, err := mw.CreateFormFile("files[0].file", tmp)
	if err != nil {
		return err
	}
	fw.Write(tgz.Bytes())
	mw.Close()
	if _, err := s.b.call(ctx, http.MethodPost, s.toolbox+"/files/bulk-upload", body.Bytes(), mw.FormDataContentType(), nil); err != nil {
		return err
	}
	r, err := s.Exec(ctx, sandbox.ExecRequest{Cmd: fmt.Sprintf("mkdir -p %q && tar -xzf %s -C %q && rm -f %s", dir, tmp, dir, tmp), User: "root"})
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return &sandbox.InfraError{Kind: "engine_error", Err: fmt.Errorf("unpacking the upload into %s: exit %d: %s", dir, r.ExitCode, r.Stdout)}
	}
	return nil
}

// Download implements sandbox.Sandbox.
func (s *daytonaSandbox) Download(ctx context.Context, path string, max int64) ([]byte, error) {
	data, err := s.b.call(ctx, http.MethodGet, s.toolbox+"/files/download?path="+url.QueryEscape(path), nil, "", nil)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		return nil, sandbox.ErrNotFound
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest && !ae.transient(): // a directory
		return nil, fmt.Errorf("download %s: not a regular file: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	if max > 0 && int64(len(data)) > max {
		data = data[:max]
	}
	return data, nil
}

// Stop implements sandbox.Sandbox: delete, even when ctx is cancelled.
func (s *daytonaSandbox) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	_, err := s.b.call(ctx, http.MethodDelete, s.b.o.APIURL+"/sandbox/"+s.id, nil, "", nil)
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// GC implements sandbox.Backend: it deletes otcurate's sandboxes (by
// label) that the options select. Snapshots are kept unless Images.
func (b *Backend) GC(ctx context.Context, opts sandbox.GCOptions) (sandbox.GCReport, error) {
	filter := map[string]string{sandbox.LabelTool: "1"}
	if opts.Run != "" {
		filter[sandbox.LabelRun] = opts.Run
	}
	var list []sandboxDTO
	if _, err := b.call(ctx, http.MethodGet, b.o.APIURL+"/sandbox?labels="+url.QueryEscape(string(jsonBody(filter))), nil, "", &list); err != nil {
		return sandbox.GCReport{}, err
	}
	var rep sandbox.GCReport
	var errs []error
	for _, sb := range list {
		if sb.State == "destroyed" || sb.State == "destroying" ||
			opts.ExceptRun != "" && sb.Labels[sandbox.LabelRun] == opts.ExceptRun ||
			opts.OrphansOnly && sandbox.OwnerAlive(sb.Labels[sandbox.LabelOwner]) {
			continue
		}
		if err := (&daytonaSandbox{b: b, id: sb.ID}).Stop(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Containers = append(rep.Containers, sb.ID)
	}
	return rep, errors.Join(errs...)
}

// Close implements sandbox.Backend.
func (b *Backend) Close() error { return nil }
