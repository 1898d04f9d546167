// Package daytonatest is an in-process server that speaks the Daytona API
// (control plane and toolbox, as docs/daytona-api.md describes it) on top of
// a real Docker engine: snapshots are image builds, sandboxes are
// containers, toolbox commands run in them. It tests the daytona backend
// against the protocol, including the failures a hosted service returns
// (rate limits, capacity errors), without a Daytona account.
package daytonatest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/docker"
)

// APIKey is the key the server accepts.
const APIKey = "test-key"

// Fault is a canned failure returned to the next sandbox creation.
type Fault struct {
	Status     int
	Message    string
	RetryAfter int // seconds, sent as Retry-After-sandbox-create
}

// RateLimited and CPUQuota are the failures a busy account sees.
var (
	RateLimited = Fault{Status: 429, Message: "Rate limit exceeded", RetryAfter: 1}
	CPUQuota    = Fault{Status: 400, Message: "Total CPU limit exceeded. Maximum allowed: 4.\nTo increase concurrency limits, upgrade your organization's Tier."}
)

// Server is the fake Daytona.
type Server struct {
	*httptest.Server
	engine *docker.Engine

	mu        sync.Mutex
	snapshots map[string]*snapshot // by name
	sandboxes map[string]*box
	faults    []Fault
	// Counters, for tests.
	Creates, Rejected, Execs int
}

type snapshot struct {
	ID, Name, State, ErrorReason string
	image                        sandbox.Image
}

type box struct {
	ID, State string
	Labels    map[string]string
	sb        sandbox.Sandbox
}

// New starts the server on engine; faults are returned, in order, to the
// first sandbox creations.
func New(engine *docker.Engine, faults ...Fault) *Server {
	s := &Server{engine: engine, snapshots: map[string]*snapshot{}, sandboxes: map[string]*box{}, faults: faults}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/snapshots/{name}", s.getSnapshot)
	mux.HandleFunc("POST /api/snapshots", s.createSnapshot)
	mux.HandleFunc("DELETE /api/snapshots/{id}", s.deleteSnapshot)
	mux.HandleFunc("POST /api/sandbox", s.createSandbox)
	mux.HandleFunc("GET /api/sandbox", s.listSandboxes)
	mux.HandleFunc("GET /api/sandbox/{id}", s.getSandbox)
	mux.HandleFunc("DELETE /api/sandbox/{id}", s.deleteSandbox)
	mux.HandleFunc("POST /toolbox/{id}/process/execute", s.execute)
	mux.HandleFunc("POST /toolbox/{id}/files/bulk-upload", s.upload)
	mux.HandleFunc("GET /toolbox/{id}/files/download", s.download)
	mux.HandleFunc("POST /toolbox/{id}/files/folder", s.folder)
	mux.HandleFunc("POST /toolbox/{id}/files/permissions", s.permissions)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+APIKey {
			apiError(w, r, http.StatusUnauthorized, "Unauthorized")
			return
		}
		mux.ServeHTTP(w, r)
	}))
	return s
}

// APIURL is the control-plane base URL.
func (s *Server) APIURL() string { return s.URL + "/api" }

// Close deletes every sandbox left and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	for _, b := range s.sandboxes {
		if b.sb != nil {
			b.sb.Stop(context.Background())
		}
	}
	s.mu.Unlock()
	s.Server.Close()
}

// apiError writes the API's error body ({statusCode, message, error, path,
// timestamp}).
func apiError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"statusCode": status, "message": msg, "error": http.StatusText(status),
		"path": r.URL.Path, "timestamp": time.Now().UTC().Format(time.RFC3339)})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// --- snapshots ---------------------------------------------------------

func (s *Server) snapshotDTO(sn *snapshot) map[string]any {
	return map[string]any{"id": sn.ID, "name": sn.Name, "state": sn.State, "errorReason": nullable(sn.ErrorReason),
		"imageName": nil, "cpu": 1, "gpu": 0, "mem": 1, "disk": 3, "general": false}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn := s.snapshots[r.PathValue("name")]
	if sn == nil {
		for _, x := range s.snapshots {
			if x.ID == r.PathValue("name") {
				sn = x
			}
		}
	}
	if sn == nil {
		apiError(w, r, http.StatusNotFound, fmt.Sprintf("Snapshot %s not found", r.PathValue("name")))
		return
	}
	reply(w, s.snapshotDTO(sn))
}

func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name      string `json:"name"`
		ImageName string `json:"imageName"`
		BuildInfo *struct {
			DockerfileContent string `json:"dockerfileContent"`
		} `json:"buildInfo"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" {
		apiError(w, r, http.StatusBadRequest, "name must be a string")
		return
	}
	if req.BuildInfo == nil || req.BuildInfo.DockerfileContent == "" {
		apiError(w, r, http.StatusBadRequest, "this fake builds snapshots from buildInfo.dockerfileContent only")
		return
	}
	s.mu.Lock()
	if _, dup := s.snapshots[req.Name]; dup {
		s.mu.Unlock()
		apiError(w, r, http.StatusConflict, fmt.Sprintf("Snapshot with name %s already exists", req.Name))
		return
	}
	sn := &snapshot{ID: newID(), Name: req.Name, State: "pending"}
	s.snapshots[req.Name] = sn
	dto := s.snapshotDTO(sn)
	s.mu.Unlock()
	go func() { // build in the background, like the service
		df := []byte(req.BuildInfo.DockerfileContent)
		sum := sha256.Sum256(df)
		img, err := s.engine.Build(context.Background(), sandbox.Environment{Hash: hex.EncodeToString(sum[:]), Task: "daytona/" + req.Name,
			Files: []bundle.Entry{{Name: "Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: df}}, BuildTimeout: 10 * time.Minute})
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			sn.State, sn.ErrorReason = "build_failed", err.Error()
			return
		}
		sn.State, sn.image = "active", img
	}()
	reply(w, dto)
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, sn := range s.snapshots {
		if sn.ID == r.PathValue("id") || name == r.PathValue("id") {
			delete(s.snapshots, name)
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	apiError(w, r, http.StatusNotFound, "Snapshot not found")
}

// --- sandboxes ---------------------------------------------------------

func (s *Server) sandboxDTO(b *box) map[string]any {
	return map[string]any{"id": b.ID, "name": b.ID, "state": b.State, "labels": b.Labels, "toolboxProxyUrl": s.URL + "/toolbox",
		"cpu": 1, "gpu": 0, "memory": 1, "disk": 3, "public": false, "target": "us", "organizationId": "org", "user": "root", "env": map[string]string{}}
}

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Snapshot        string            `json:"snapshot"`
		BuildInfo       json.RawMessage   `json:"buildInfo"`
		Env             map[string]string `json:"env"`
		Labels          map[string]string `json:"labels"`
		NetworkBlockAll bool              `json:"networkBlockAll"`
		CPU             *int              `json:"cpu"`
		Memory          *int              `json:"memory"`
		Disk            *int              `json:"disk"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		apiError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.Lock()
	s.Creates++
	if len(s.faults) > 0 {
		f := s.faults[0]
		s.faults = s.faults[1:]
		s.Rejected++
		s.mu.Unlock()
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After-sandbox-create", strconv.Itoa(f.RetryAfter))
		}
		apiError(w, r, f.Status, f.Message)
		return
	}
	switch {
	case len(req.BuildInfo) > 0 && req.Snapshot != "":
		s.mu.Unlock()
		apiError(w, r, http.StatusBadRequest, "Cannot specify a snapshot when using a build info entry")
		return
	case len(req.BuildInfo) == 0 && (req.CPU != nil || req.Memory != nil || req.Disk != nil):
		s.mu.Unlock()
		apiError(w, r, http.StatusBadRequest, "Cannot specify Sandbox resources when using a snapshot")
		return
	case len(req.BuildInfo) > 0:
		s.mu.Unlock()
		apiError(w, r, http.StatusBadRequest, "this fake creates sandboxes from snapshots only")
		return
	}
	sn := s.snapshots[req.Snapshot]
	s.mu.Unlock()
	if sn == nil || sn.State != "active" {
		apiError(w, r, http.StatusNotFound, fmt.Sprintf("Snapshot %s not found. Did you add it through the Daytona Dashboard?", req.Snapshot))
		return
	}
	labels := map[string]string{}
	for k, v := range req.Labels {
		labels[k] = v
	}
	sb, err := s.engine.Start(r.Context(), sandbox.StartSpec{Image: sn.image, Env: req.Env, Network: !req.NetworkBlockAll,
		Labels: map[string]string{sandbox.LabelTask: labels[sandbox.LabelTask]}})
	if err != nil {
		apiError(w, r, http.StatusBadRequest, "Sandbox failed to start: "+err.Error())
		return
	}
	b := &box{ID: newID(), State: "started", Labels: labels, sb: sb}
	s.mu.Lock()
	s.sandboxes[b.ID] = b
	dto := s.sandboxDTO(b)
	s.mu.Unlock()
	reply(w, dto)
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) *box {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.sandboxes[r.PathValue("id")]
	if b == nil || b.State == "destroyed" {
		apiError(w, r, http.StatusNotFound, fmt.Sprintf("Sandbox with ID or name %s not found", r.PathValue("id")))
		return nil
	}
	return b
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) {
	if b := s.lookup(w, r); b != nil {
		s.mu.Lock()
		dto := s.sandboxDTO(b)
		s.mu.Unlock()
		reply(w, dto)
	}
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) {
	want := map[string]string{}
	if l := r.URL.Query().Get("labels"); l != "" {
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			apiError(w, r, http.StatusBadRequest, "Invalid labels JSON")
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, b := range s.sandboxes {
		ok := b.State != "destroyed"
		for k, v := range want {
			ok = ok && b.Labels[k] == v
		}
		if ok {
			out = append(out, s.sandboxDTO(b))
		}
	}
	reply(w, out)
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	b := s.lookup(w, r)
	if b == nil {
		return
	}
	err := b.sb.Stop(r.Context())
	s.mu.Lock()
	b.State = "destroyed"
	dto := s.sandboxDTO(b)
	s.mu.Unlock()
	if err != nil {
		apiError(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	dto["state"] = "destroying"
	reply(w, dto)
}

// --- toolbox -----------------------------------------------------------

// splitCommand splits like the daemon: on spaces, honouring '…' and "…".
func splitCommand(cmd string) []string {
	var args []string
	var cur strings.Builder
	var quote rune
	in := false
	for _, c := range cmd {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ':
			if in {
				args = append(args, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if in {
		args = append(args, cur.String())
	}
	return args
}

// argvExecer is a sandbox that runs a command's words without a shell
// (docker's sandboxes).
type argvExecer interface {
	ExecArgv(ctx context.Context, argv []string, req sandbox.ExecRequest) (sandbox.ExecResult, error)
}

func (s *Server) execute(w http.ResponseWriter, r *http.Request) {
	b := s.lookup(w, r)
	if b == nil {
		return
	}
	var req struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
		Timeout int    `json:"timeout"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Command == "" {
		apiError(w, r, http.StatusBadRequest, "command is required")
		return
	}
	s.mu.Lock()
	s.Execs++
	s.mu.Unlock()
	args := splitCommand(req.Command)
	// Like the daemon: the words are exec'd as they are, without a shell
	// (an image's replaced bash or sh never sees a command that does not
	// name it). The whole output goes back (the client caps it; the API
	// has no field to say the server dropped some).
	ae, ok := b.sb.(argvExecer)
	if !ok {
		apiError(w, r, http.StatusInternalServerError, "this fake needs a sandbox that runs argv without a shell")
		return
	}
	res, err := ae.ExecArgv(r.Context(), args, sandbox.ExecRequest{Workdir: req.Cwd,
		Timeout: time.Duration(req.Timeout) * time.Second, MaxOutput: 64 << 20})
	if err != nil {
		apiError(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	if res.TimedOut {
		apiError(w, r, http.StatusRequestTimeout, "command execution timeout")
		return
	}
	reply(w, map[string]any{"exitCode": res.ExitCode, "result": string(res.Stdout) + string(res.Stderr)})
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	b := s.lookup(w, r)
	if b == nil {
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		apiError(w, r, http.StatusBadRequest, err.Error())
		return
	}
	paths := map[string]string{}
	var done []map[string]any
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			apiError(w, r, http.StatusBadRequest, err.Error())
			return
		}
		name := p.FormName()
		data, _ := io.ReadAll(p)
		switch {
		case strings.HasSuffix(name, ".path"):
			paths[strings.TrimSuffix(name, ".path")] = string(data)
		case strings.HasSuffix(name, ".file"):
			dest, ok := paths[strings.TrimSuffix(name, ".file")]
			if !ok { // the daemon streams: the path must come first
				apiError(w, r, http.StatusBadRequest, "file part before its path part")
				return
			}
			if err := b.sb.Upload(r.Context(), path.Dir(dest), []bundle.Entry{{Name: path.Base(dest), Kind: bundle.KindFile, Mode: 0o644, Data: data}}); err != nil {
				apiError(w, r, http.StatusInternalServerError, err.Error())
				return
			}
			done = append(done, map[string]any{"path": dest, "bytes": len(data)})
		}
	}
	reply(w, map[string]any{"files": done})
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	b := s.lookup(w, r)
	if b == nil {
		return
	}
	p := r.URL.Query().Get("path")
	data, err := b.sb.Download(r.Context(), p, 1<<30)
	if errors.Is(err, sandbox.ErrNotFound) {
		apiError(w, r, http.StatusNotFound, "file not found")
		return
	}
	if err != nil && !sandbox.IsInfra(err) { // a directory, like the daemon
		apiError(w, r, http.StatusBadRequest, "path must be a file: "+err.Error())
		return
	}
	if err != nil {
		apiError(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", "attachment; filename="+path.Base(p))
	w.Write(data)
}

// folder creates a directory with a mode (an octal string), parents as
// needed, like the daemon's CreateFolder; written through the engine,
// not by a program of the image.
func (s *Server) folder(w http.ResponseWriter, r *http.Request) {
	b := s.lookup(w, r)
	if b == nil {
		return
	}
	p, mode := r.URL.Query().Get("path"), r.URL.Query().Get("mode")
	m, err := strconv.ParseUint(mode, 8, 32)
	if !path.IsAbs(p) || path.Clean(p) == "/" || err != nil {
		apiError(w, r, http.StatusBadRequest, "invalid path or mode")
		return
	}
	p = path.Clean(p)
	if err := b.sb.Upload(r.Context(), path.Dir(p), []bundle.Entry{{Name: path.Base(p), Kind: bundle.KindDir, Mode: fs.FileMode(m)}}); err != nil {
		apiError(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// permissions sets a file's mode (owner and group: root only, which is
// what this fake's files always have), like the daemon's
// SetFilePermissions. The fake rewrites the file through the engine.
func (s *Server) permissions(w http.ResponseWriter, r *http.Request) {
	b := s.lookup(w, r)
	if b == nil {
		return
	}
	q := r.URL.Query()
	p := path.Clean(q.Get("path"))
	m, err := strconv.ParseUint(q.Get("mode"), 8, 32)
	if !path.IsAbs(p) || err != nil {
		apiError(w, r, http.StatusBadRequest, "invalid path or mode")
		return
	}
	for _, k := range []string{"owner", "group"} {
		if v := q.Get(k); v != "" && v != "root" && v != "0" {
			apiError(w, r, http.StatusBadRequest, "this fake sets owner and group root only")
			return
		}
	}
	data, err := b.sb.Download(r.Context(), p, 1<<30)
	if errors.Is(err, sandbox.ErrNotFound) {
		apiError(w, r, http.StatusNotFound, "file not found")
		return
	}
	if err != nil {
		apiError(w, r, http.StatusBadRequest, "this fake sets the mode of regular files only: "+err.Error())
		return
	}
	if err := b.sb.Upload(r.Context(), path.Dir(p), []bundle.Entry{{Name: path.Base(p), Kind: bundle.KindFile, Mode: fs.FileMode(m), Data: data}}); err != nil {
		apiError(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
}
