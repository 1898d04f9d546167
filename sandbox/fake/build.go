package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// imageRepo is the repository part of the fake's image references.
const imageRepo = "otcurate-fake"

// buildLogMax is how much of the end of a build log is kept.
const buildLogMax = 4 << 10

// buildCall is one in-flight build, shared by every caller asking for the
// same image while it runs.
type buildCall struct {
	done chan struct{}
	img  sandbox.Image
	err  error
}

// image is a built image on disk.
type image struct {
	layer string
	cfg   imageConfig
}

// imageMeta is images/<tag>/image.json.
type imageMeta struct {
	Hash   string      `json:"hash"`
	Run    string      `json:"run"`
	Owner  string      `json:"owner"`
	Config imageConfig `json:"config"`
}

// tagOf is the first 16 hex digits of an environment hash.
func tagOf(hash string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(hash, "sha256:"))
	if len(h) < 16 || strings.Trim(h[:16], "0123456789abcdef") != "" {
		return "", fmt.Errorf("environment hash %q: want at least 16 hex digits", hash)
	}
	return h[:16], nil
}

// Build returns the image of env: a directory layer made by interpreting
// the Dockerfile over the host's root filesystem, cached by hash.
// Concurrent calls for one environment share one build. An instruction
// the fake cannot honour, a failing RUN or a build over env.BuildTimeout
// is a *sandbox.BuildError.
func (b *Backend) Build(ctx context.Context, env sandbox.Environment) (sandbox.Image, error) {
	tag, err := tagOf(env.Hash)
	if err != nil {
		return sandbox.Image{}, err
	}
	if _, err := dockerfileOf(env.Files); err != nil {
		return sandbox.Image{}, err
	}
	ref := imageRepo + ":" + tag
	if !env.Rebuild {
		if m, err := readImageMeta(b.dir, tag); err == nil && m.Hash == env.Hash {
			return sandbox.Image{Ref: ref, Cached: true}, nil
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return sandbox.Image{}, errors.New("fake sandbox backend is closed")
	}
	c := b.builds[tag]
	if c == nil {
		c = &buildCall{done: make(chan struct{})}
		b.builds[tag] = c
		b.bg.Add(1)
		go func() {
			defer b.bg.Done()
			defer close(c.done)
			c.img, c.err = b.build(tag, env)
			b.mu.Lock()
			delete(b.builds, tag)
			b.mu.Unlock()
		}()
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.img, c.err
	case <-ctx.Done():
		return sandbox.Image{}, fmt.Errorf("build %s: %w", ref, ctx.Err())
	}
}

// dockerfileOf finds the Dockerfile at the root of the build context.
func dockerfileOf(files []bundle.Entry) ([]byte, error) {
	var compose bool
	for _, f := range files {
		switch f.Name {
		case "Dockerfile":
			if f.Kind == bundle.KindFile {
				var sb strings.Builder
				if err := copyEntry(&sb, f); err != nil {
					return nil, &sandbox.BuildError{Err: fmt.Errorf("reading the Dockerfile: %w", err)}
				}
				return []byte(sb.String()), nil
			}
		case "docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml":
			compose = true
		}
	}
	if compose {
		return nil, &sandbox.BuildError{Err: errors.New("docker-compose environments are not supported yet (no Dockerfile at the root of environment/)")}
	}
	return nil, &sandbox.BuildError{Err: errors.New("environment/ has no Dockerfile")}
}

func readImageMeta(dir, tag string) (imageMeta, error) {
	var m imageMeta
	data, err := os.ReadFile(filepath.Join(imagesDir(dir), tag, "image.json"))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(data, &m)
}

// loadImage finds a built image by reference.
func (b *Backend) loadImage(ref string) (image, error) {
	tag, ok := strings.CutPrefix(ref, imageRepo+":")
	if !ok {
		return image{}, fmt.Errorf("start: %q is not an image of the fake backend", ref)
	}
	m, err := readImageMeta(b.dir, tag)
	if err != nil {
		return image{}, infra("start: image "+ref, err)
	}
	return image{layer: filepath.Join(imagesDir(b.dir), tag, "layer"), cfg: m.Config}, nil
}

// builder is the state of one build.
type builder struct {
	b       *Backend
	c       *container
	files   []bundle.Entry // the build context, .dockerignore applied
	cfg     imageConfig
	args    map[string]string // ARG values in scope
	log     *sandbox.HeadTail
	froms   int
	warning []string
}

// build runs one build under the environment's build timeout, until
// Close at the latest. A caller that gives up returns at once; the build
// goes on for the other waiters and the cache.
func (b *Backend) build(tag string, env sandbox.Environment) (sandbox.Image, error) {
	start := time.Now()
	parent := b.ctx
	ctx, cancel := context.WithCancel(parent)
	if env.BuildTimeout > 0 {
		ctx, cancel = context.WithTimeout(parent, env.BuildTimeout)
	}
	defer cancel()
	dockerfile, err := dockerfileOf(env.Files)
	if err != nil {
		return sandbox.Image{}, err
	}
	instrs, err := parseDockerfile(dockerfile)
	if err != nil {
		return sandbox.Image{}, &sandbox.BuildError{Err: err}
	}
	work := filepath.Join(imagesDir(b.dir), ".build-"+newID()[:16])
	if err := os.MkdirAll(filepath.Join(work, "layer"), 0o755); err != nil {
		return sandbox.Image{}, infra("build", err)
	}
	if err := os.Mkdir(filepath.Join(work, "work"), 0o700); err != nil {
		_ = os.RemoveAll(work)
		return sandbox.Image{}, infra("build", err)
	}
	defer os.RemoveAll(work) // a no-op once renamed into place
	c, err := b.startContainer(ctx, containerSpec{kind: "build", upper: filepath.Join(work, "layer"),
		work: filepath.Join(work, "work"), network: true,
		labels: map[string]string{sandbox.LabelEnv: env.Hash, sandbox.LabelTask: env.Task}})
	if err != nil {
		if ctx.Err() != nil {
			return sandbox.Image{}, b.timeoutError(parent, env, sandbox.NewTail(buildLogMax))
		}
		return sandbox.Image{}, err
	}
	bd := &builder{b: b, c: c, files: dockerignore(env.Files), args: map[string]string{}, log: sandbox.NewTail(buildLogMax)}
	err = bd.run(ctx, instrs)
	c.kill()
	_ = c.remove()
	if err != nil {
		if ctx.Err() != nil && parent.Err() == nil {
			return sandbox.Image{}, b.timeoutError(parent, env, bd.log)
		}
		var be *sandbox.BuildError
		if errors.As(err, &be) && be.Log == "" {
			be.Log = bd.log.String()
			be.Offline = looksOffline(be.Log)
		}
		return sandbox.Image{}, err
	}
	meta := imageMeta{Hash: env.Hash, Run: b.runID, Owner: b.owner, Config: bd.cfg}
	data, err := json.Marshal(meta)
	if err == nil {
		err = os.WriteFile(filepath.Join(work, "image.json"), data, 0o600)
	}
	if err == nil {
		err = os.RemoveAll(filepath.Join(work, "work"))
	}
	if err == nil {
		err = b.install(work, tag, env)
	}
	if err != nil {
		return sandbox.Image{}, infra("build", err)
	}
	warnings := append([]string{}, bd.warning...)
	img := sandbox.Image{Ref: imageRepo + ":" + tag, Duration: time.Since(start), Log: bd.log.String(), Warnings: warnings}
	b.log.Info("built environment image", "tag", tag, "task", env.Task, "duration", img.Duration.Round(time.Millisecond))
	return img, nil
}

func (b *Backend) timeoutError(parent context.Context, env sandbox.Environment, log *sandbox.HeadTail) error {
	if parent.Err() != nil {
		return fmt.Errorf("build: %w", parent.Err())
	}
	l := log.String()
	return &sandbox.BuildError{Timeout: true, Offline: looksOffline(l), Log: l,
		Err: fmt.Errorf("no image after %s (build_timeout_sec)", env.BuildTimeout)}
}

// install moves a finished build into place. When another process
// built the same environment meanwhile, its image is kept (ours is
// dropped), unless env.Rebuild. A replaced image is renamed to .old-*,
// not removed: sandboxes may still use it as their lower layer; GC with
// Images removes it.
func (b *Backend) install(work, tag string, env sandbox.Environment) error {
	final := filepath.Join(imagesDir(b.dir), tag)
	if _, err := os.Stat(final); err == nil {
		if m, err := readImageMeta(b.dir, tag); err == nil && m.Hash == env.Hash && !env.Rebuild {
			return nil // the deferred RemoveAll drops ours
		}
		if err := os.Rename(final, filepath.Join(imagesDir(b.dir), ".old-"+newID()[:16])); err != nil {
			return err
		}
	}
	return os.Rename(work, final)
}

// run interprets the instructions.
func (bd *builder) run(ctx context.Context, instrs []instruction) error {
	for i, in := range instrs {
		fmt.Fprintf(bd.log, "Step %d/%d : %s\n", i+1, len(instrs), in)
		if err := bd.step(ctx, in); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if bd.froms == 0 {
		return &sandbox.BuildError{Err: errors.New("no FROM instruction")}
	}
	return nil
}

// unsupported is the error of an instruction the fake cannot honour.
func unsupported(in instruction, why string) error {
	return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: %s: not supported by the fake sandbox backend (%s)", in.line, in.cmd, why)}
}

// vars are the variables visible to expansion: ARGs, then ENV.
func (bd *builder) vars() map[string]string {
	v := make(map[string]string, len(bd.args)+len(bd.cfg.Env))
	for k, x := range bd.args {
		v[k] = x
	}
	for _, kv := range bd.cfg.Env {
		k, x, _ := strings.Cut(kv, "=")
		v[k] = x
	}
	return v
}

func (bd *builder) step(ctx context.Context, in instruction) error {
	if bd.froms == 0 && in.cmd != "FROM" && in.cmd != "ARG" {
		return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: %s before FROM", in.line, in.cmd)}
	}
	switch in.cmd {
	case "FROM":
		if bd.froms > 0 {
			return unsupported(in, "multi-stage builds")
		}
		bd.froms++
		f := strings.Fields(expand(in.args, bd.args))
		ref := ""
		if len(f) > 0 {
			ref = f[0]
		}
		bd.warning = append(bd.warning, fmt.Sprintf("FROM %s: mapped to the host's root filesystem (fake sandbox backend)", ref))
		if name := path.Base(strings.SplitN(ref, ":", 2)[0]); name == "python" || name == "pypy" {
			return bd.pythonAliases(ctx)
		}
		return nil
	case "ARG":
		ws, err := words(in.args, bd.vars())
		if err != nil || len(ws) == 0 {
			return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: bad ARG %q", in.line, in.args)}
		}
		for _, w := range ws {
			if k, v, ok := strings.Cut(w, "="); ok {
				bd.args[k] = v
			} else if _, set := bd.args[w]; !set {
				bd.args[w] = ""
			}
		}
		return nil
	case "ENV":
		kvs, err := keyValues(in.args, bd.vars())
		if err != nil {
			return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: ENV: %w", in.line, err)}
		}
		for _, kv := range kvs {
			bd.cfg.Env = mergeEnv(bd.cfg.Env, map[string]string{kv[0]: kv[1]})
		}
		return nil
	case "WORKDIR":
		wd := expand(strings.TrimSpace(in.args), bd.vars())
		if !path.IsAbs(wd) {
			base := bd.cfg.Workdir
			if base == "" {
				base = "/"
			}
			wd = path.Join(base, wd)
		}
		bd.cfg.Workdir = path.Clean(wd)
		if err := uploadIn(bd.c, bd.cfg.Workdir, nil, owner{}); err != nil {
			return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: WORKDIR %s: %w", in.line, wd, err)}
		}
		return nil
	case "USER":
		bd.cfg.User = expand(strings.TrimSpace(in.args), bd.vars())
		return nil
	case "SHELL":
		if len(in.json) == 0 {
			return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: SHELL needs the JSON form", in.line)}
		}
		bd.cfg.Shell = in.json
		return nil
	case "CMD", "ENTRYPOINT":
		argv := in.json
		if argv == nil {
			argv = append(bd.shell(), in.args)
		}
		if in.cmd == "CMD" {
			bd.cfg.Cmd = argv
		} else {
			bd.cfg.Entrypoint = argv
		}
		return nil
	case "RUN":
		return bd.runStep(ctx, in)
	case "COPY", "ADD":
		return bd.copyStep(ctx, in)
	case "LABEL", "EXPOSE", "VOLUME", "STOPSIGNAL", "HEALTHCHECK", "MAINTAINER":
		return nil // image metadata the fake has no use for
	case "ONBUILD":
		return unsupported(in, "ONBUILD triggers")
	}
	return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: unknown instruction %s", in.line, in.cmd)}
}

func (bd *builder) shell() []string {
	if len(bd.cfg.Shell) > 0 {
		return append([]string{}, bd.cfg.Shell...)
	}
	return []string{"/bin/sh", "-c"}
}

// pythonAliases gives an image FROM python the commands python and pip of
// the official images when the host has only python3 and pip3, and lets
// pip install into the system Python as there (Debian's
// EXTERNALLY-MANAGED marker is removed in the image, not on the host).
func (bd *builder) pythonAliases(ctx context.Context) error {
	const script = `for c in python pip; do
  if ! command -v "$c" >/dev/null && p=$(command -v "${c}3"); then ln -s "$p" "/usr/local/bin/$c"; fi
done
rm -f /usr/lib/python3*/EXTERNALLY-MANAGED; true`
	w := &syncWriter{w: bd.log}
	_, _, err := bd.c.run(ctx, proc{argv: []string{"bash", "-c", script}, user: "root", workdir: "/"}, w, w, 0)
	return err
}

// runStep runs a RUN instruction in the build container.
func (bd *builder) runStep(ctx context.Context, in instruction) error {
	for _, f := range in.flags {
		return unsupported(in, "RUN flag "+f)
	}
	argv := in.json
	if argv == nil {
		argv = append(bd.shell(), in.args)
	}
	if len(argv) == 0 {
		return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: empty RUN", in.line)}
	}
	env := bd.cfg.Env
	for k, v := range bd.args { // build arguments are in RUN's environment, not the image's
		if !hasKey(env, k) {
			env = append(env, k+"="+v)
		}
	}
	wd := bd.cfg.Workdir
	if wd == "" {
		wd = "/"
	}
	w := &syncWriter{w: bd.log}
	code, _, err := bd.c.run(ctx, proc{argv: argv, user: bd.cfg.User, workdir: wd, env: env}, w, w, 0)
	if err != nil {
		return err
	}
	if code != 0 {
		return &sandbox.BuildError{Err: fmt.Errorf("The command '%s' returned a non-zero code: %d", strings.Join(argv, " "), code)}
	}
	return nil
}

// syncWriter serialises the writes of a command's two output streams
// into the build log.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// copyStep runs COPY or ADD of files of the build context (ADD of a URL
// and COPY --from are not supported; ADD of a local tar archive extracts
// it, as Docker does).
func (bd *builder) copyStep(ctx context.Context, in instruction) error {
	if _, ok := flag(in.flags, "from"); ok {
		return unsupported(in, "COPY --from")
	}
	for _, f := range in.flags {
		if !strings.HasPrefix(f, "--chown=") && !strings.HasPrefix(f, "--chmod=") && f != "--link" {
			return unsupported(in, "flag "+f)
		}
	}
	vars := bd.vars()
	parts := in.json
	if parts == nil {
		ws, err := words(in.args, vars)
		if err != nil {
			return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: %w", in.line, err)}
		}
		parts = ws
	} else {
		for i := range parts {
			parts[i] = expand(parts[i], vars)
		}
	}
	if len(parts) < 2 {
		return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: %s needs a source and a destination", in.line, in.cmd)}
	}
	srcs, dest := parts[:len(parts)-1], parts[len(parts)-1]
	if !path.IsAbs(dest) {
		wd := bd.cfg.Workdir
		if wd == "" {
			wd = "/"
		}
		dir := strings.HasSuffix(dest, "/") || dest == "."
		dest = path.Join(wd, dest)
		if dir {
			dest += "/"
		}
	}
	o := owner{}
	if spec, ok := flag(in.flags, "chown"); ok {
		u, err := lookupUser(bd.c, spec)
		if err != nil {
			return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: --chown=%s: %w", in.line, spec, err)}
		}
		o = owner{uid: u.uid, gid: u.gid}
	}
	var chmod fs.FileMode
	if m, ok := flag(in.flags, "chmod"); ok {
		n, err := strconv.ParseUint(m, 8, 32)
		if err != nil {
			return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: --chmod=%s: not an octal mode", in.line, m)}
		}
		chmod = fs.FileMode(n)
	}

	type item struct {
		entries []bundle.Entry // renamed relative to the target directory
		dir     string         // target directory
	}
	var items []item
	many := len(srcs) > 1
	var matched [][]bundle.Entry
	var isDir []bool
	var names []string
	for _, src := range srcs {
		if in.cmd == "ADD" && (strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "git@")) {
			return unsupported(in, "ADD of a URL")
		}
		ms := bd.match(src)
		if len(ms) == 0 {
			return &sandbox.BuildError{Err: fmt.Errorf("COPY failed: file not found in build context or excluded by .dockerignore: stat %s: file does not exist", src)}
		}
		if len(ms) > 1 {
			many = true
		}
		for _, m := range ms {
			ents, dir := bd.entriesOf(m)
			matched, isDir, names = append(matched, ents), append(isDir, dir), append(names, m)
		}
	}
	destDir := strings.HasSuffix(dest, "/") || many
	if !destDir {
		if st, err := statIn(bd.c, dest); err == nil && st.IsDir() {
			destDir = true
		}
	}
	dest = path.Clean(dest)
	for i, ents := range matched {
		if chmod != 0 {
			for j := range ents {
				if ents[j].Kind == bundle.KindFile || ents[j].Kind == bundle.KindDir {
					ents[j].Mode = ents[j].Mode.Type() | chmod
				}
			}
		}
		switch {
		case isDir[i]:
			items = append(items, item{entries: ents, dir: dest})
		case destDir:
			ents[0].Name = path.Base(names[i])
			items = append(items, item{entries: ents, dir: dest})
		default:
			ents[0].Name = path.Base(dest)
			items = append(items, item{entries: ents, dir: path.Dir(dest)})
		}
	}
	for i, it := range items {
		if in.cmd == "ADD" && !isDir[i] && isArchive(names[i]) {
			if err := bd.extract(ctx, in, it.entries[0], dest, o); err != nil {
				return err
			}
			continue
		}
		if err := uploadIn(bd.c, it.dir, it.entries, o); err != nil {
			return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: %s to %s: %w", in.line, in.cmd, it.dir, err)}
		}
	}
	return nil
}

// match expands a source (wildcards allowed) into context names; "." is
// the whole context.
func (bd *builder) match(src string) []string {
	src = path.Clean(strings.TrimPrefix(src, "/"))
	if src == "." || src == "" {
		return []string{"."}
	}
	var out []string
	seen := map[string]bool{}
	depth := strings.Count(src, "/")
	for _, f := range bd.files {
		parts := strings.Split(f.Name, "/")
		if len(parts) <= depth {
			continue
		}
		cand := strings.Join(parts[:depth+1], "/")
		if seen[cand] {
			continue
		}
		if ok, _ := path.Match(src, cand); ok {
			seen[cand] = true
			out = append(out, cand)
		}
	}
	return out
}

// entriesOf returns the entries of a context name: a directory's members
// renamed relative to it (dir true), or the one file.
func (bd *builder) entriesOf(name string) (ents []bundle.Entry, dir bool) {
	for _, f := range bd.files {
		switch {
		case name == ".":
			ents = append(ents, f)
			dir = true
		case f.Name == name && f.Kind != bundle.KindDir:
			return []bundle.Entry{f}, false
		case strings.HasPrefix(f.Name, name+"/"):
			f.Name = strings.TrimPrefix(f.Name, name+"/")
			ents = append(ents, f)
			dir = true
		case f.Name == name:
			dir = true
		}
	}
	return ents, dir
}

// isArchive reports a name ADD extracts.
func isArchive(name string) bool {
	for _, ext := range []string{".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// extract uploads an archive and unpacks it into dest with tar.
func (bd *builder) extract(ctx context.Context, in instruction, f bundle.Entry, dest string, o owner) error {
	tmp := "/.otcurate-add-" + newID()[:8]
	f.Name = "archive"
	if err := uploadIn(bd.c, tmp, []bundle.Entry{f}, owner{}); err != nil {
		return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: ADD: %w", in.line, err)}
	}
	script := `mkdir -p "$2" && tar -xf "$1/archive" -C "$2" && rm -rf "$1"`
	if o.uid != 0 || o.gid != 0 {
		script += ` && chown -R ` + strconv.Itoa(o.uid) + ":" + strconv.Itoa(o.gid) + ` "$2"`
	}
	w := &syncWriter{w: bd.log}
	code, _, err := bd.c.run(ctx, proc{argv: []string{"bash", "-c", script, "add", tmp, dest}, user: "root", workdir: "/"}, w, w, 0)
	if err != nil {
		return err
	}
	if code != 0 {
		return &sandbox.BuildError{Err: fmt.Errorf("Dockerfile line %d: ADD: extracting %s failed (exit %d)", in.line, f.Name, code)}
	}
	return nil
}

// dockerignore drops the context members .dockerignore excludes (simple
// patterns: path.Match on each member and its parents, "!" re-includes).
func dockerignore(files []bundle.Entry) []bundle.Entry {
	var patterns []string
	for _, f := range files {
		if f.Name == ".dockerignore" && f.Kind == bundle.KindFile {
			var sb strings.Builder
			if copyEntry(&sb, f) == nil {
				for _, l := range strings.Split(sb.String(), "\n") {
					if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
						patterns = append(patterns, l)
					}
				}
			}
		}
	}
	if len(patterns) == 0 {
		return files
	}
	var out []bundle.Entry
	for _, f := range files {
		excluded := false
		for _, p := range patterns {
			neg := strings.HasPrefix(p, "!")
			p = path.Clean(strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/"))
			if ignoreMatch(p, f.Name) {
				excluded = !neg
			}
		}
		if !excluded {
			out = append(out, f)
		}
	}
	return out
}

func ignoreMatch(pattern, name string) bool {
	for n := name; n != "." && n != ""; n = path.Dir(n) {
		if ok, _ := path.Match(pattern, n); ok {
			return true
		}
		if pattern == "**" {
			return true
		}
	}
	return false
}

// offlineMarkers are log fragments of a build that needed a network, a
// registry, or Alpine's apk on a Debian stand-in (the Docker backend's
// list: a build means the same on both).
var offlineMarkers = []string{
	"temporary failure resolving", "could not resolve", "temporary failure in name resolution",
	"name or service not known", "no such host", "dial tcp", "i/o timeout",
	"network is unreachable", "failed to establish a new connection", "could not connect to",
	"unable to connect to", "unable to resolve host", "eai_again", "enotfound", "failed to fetch",
	"pull access denied", "registry-1.docker.io", "manifest unknown", "repository does not exist",
	"error response from daemon: get https://", "toomanyrequests",
	"apk: not found", "apk: command not found", "apk add", "unable to select packages",
}

func looksOffline(log string) bool {
	l := strings.ToLower(log)
	for _, m := range offlineMarkers {
		if strings.Contains(l, m) {
			return true
		}
	}
	return false
}
