package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// imageRepo is the repository of every environment image; the tag is the
// first 16 hex digits of the environment hash.
const imageRepo = "otcurate-env"

// buildLogMax is how much of the end of a build log is kept.
const buildLogMax = 4 << 10

// baseRecipeLabel marks the local stand-in base images made by
// scripts/setup-docker.sh.
const baseRecipeLabel = "otcurate.base.recipe"

// buildCall is one in-flight build, shared by every caller that asks for
// the same image while it runs.
type buildCall struct {
	done    chan struct{} // closed when img and err are set
	img     sandbox.Image
	err     error
	waiters int
	cancel  context.CancelFunc
}

// ImageTag is the image reference of an environment: otcurate-env:<first
// 16 hex digits of hash>.
func ImageTag(hash string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(hash, "sha256:"))
	if len(h) < 16 || strings.Trim(h[:16], "0123456789abcdef") != "" {
		return "", fmt.Errorf("environment hash %q: want at least 16 hex digits", hash)
	}
	return imageRepo + ":" + h[:16], nil
}

// Build returns the image of env, building it unless an image with its tag
// exists. Concurrent calls for the same environment share one build; the
// build is cancelled only when every caller has given up.
func (d *Engine) Build(ctx context.Context, env sandbox.Environment) (sandbox.Image, error) {
	tag, err := ImageTag(env.Hash)
	if err != nil {
		return sandbox.Image{}, err
	}
	if err := checkBuildable(env.Files); err != nil {
		return sandbox.Image{}, err
	}
	if !env.Rebuild {
		if img, ok, err := d.cachedImage(ctx, tag, env.Hash); err != nil || ok {
			if ok {
				d.images.Store(env.Hash, true)
			}
			return img, err
		}
	}
	img, err := d.sharedBuild(ctx, tag, env)
	if err == nil {
		d.images.Store(env.Hash, true)
	}
	return img, err
}

// checkBuildable rejects environments this backend cannot build.
func checkBuildable(files []bundle.Entry) error {
	var compose bool
	for _, f := range files {
		switch f.Name {
		case "Dockerfile":
			if f.Kind == bundle.KindFile {
				return nil
			}
		case "docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml":
			compose = true
		}
	}
	if compose {
		return &sandbox.BuildError{Err: errors.New("docker-compose environments are not supported yet (no Dockerfile at the root of environment/)")}
	}
	return &sandbox.BuildError{Err: errors.New("environment/ has no Dockerfile")}
}

// cachedImage looks the tag up. An image whose env label names another
// hash (a 64-bit prefix collision) does not count.
func (d *Engine) cachedImage(ctx context.Context, tag, hash string) (sandbox.Image, bool, error) {
	res, err := d.cli.ImageInspect(ctx, tag)
	if cerrdefs.IsNotFound(err) {
		return sandbox.Image{}, false, nil
	}
	if err != nil {
		return sandbox.Image{}, false, engineError(ctx, "inspect image "+tag, err)
	}
	if res.Config != nil {
		if got := res.Config.Labels[sandbox.LabelEnv]; got != "" && got != hash {
			d.log.Warn("image tag collision: rebuilding", "tag", tag, "have", got, "want", hash)
			return sandbox.Image{}, false, nil
		}
	}
	return sandbox.Image{Ref: tag, Cached: true}, true, nil
}

// sharedBuild joins the in-flight build of tag or starts one.
func (d *Engine) sharedBuild(ctx context.Context, tag string, env sandbox.Environment) (sandbox.Image, error) {
	d.mu.Lock()
	c := d.builds[tag]
	if c == nil {
		bctx, cancel := context.WithCancel(d.ctx)
		c = &buildCall{done: make(chan struct{}), cancel: cancel}
		d.builds[tag] = c
		d.bg.Add(1)
		go d.runBuild(bctx, c, tag, env)
	}
	c.waiters++
	d.mu.Unlock()

	select {
	case <-c.done:
		return c.img, c.err
	case <-ctx.Done():
		d.leaveBuild(tag, c)
		return sandbox.Image{}, fmt.Errorf("build %s: %w", tag, ctx.Err())
	}
}

// leaveBuild drops one waiter; the last one cancels the build, and a later
// caller starts a fresh one.
func (d *Engine) leaveBuild(tag string, c *buildCall) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c.waiters--
	if c.waiters == 0 {
		c.cancel()
		if d.builds[tag] == c {
			delete(d.builds, tag)
		}
	}
}

func (d *Engine) runBuild(ctx context.Context, c *buildCall, tag string, env sandbox.Environment) {
	defer d.bg.Done()
	defer close(c.done)
	c.img, c.err = d.build(ctx, tag, env)
	c.cancel()
	d.mu.Lock()
	if d.builds[tag] == c {
		delete(d.builds, tag)
	}
	d.mu.Unlock()
}

// build runs one classic-builder build of env under its build timeout.
func (d *Engine) build(parent context.Context, tag string, env sandbox.Environment) (sandbox.Image, error) {
	start := time.Now()
	ctx, cancel := parent, context.CancelFunc(func() {})
	if env.BuildTimeout > 0 {
		ctx, cancel = context.WithTimeout(parent, env.BuildTimeout)
	}
	defer cancel()

	files, baked := withLogDirs(env.Files)
	tarball, err := contextTar(files)
	if err != nil {
		return sandbox.Image{}, &sandbox.BuildError{Err: fmt.Errorf("build context: %w", err)}
	}
	warnings := d.baseImageWarnings(ctx, env.Files)
	log := d.log.With("tag", tag, "task", env.Task)
	log.Info("building environment image", "context_bytes", len(tarball))

	out, err := d.imageBuild(ctx, tag, env.Hash, tarball, env.Rebuild, baked)
	// Containers of RUN steps the engine did not report as removed: after a
	// timeout or a cancel the engine kills and removes them itself (it sees
	// the connection close); make sure of it.
	d.removeBuildContainers(parent, out.pending())

	if err := buildFailure(parent, ctx, tag, env.BuildTimeout, out, err); err != nil {
		log.Info("build failed", "err", err)
		return sandbox.Image{}, err
	}
	if _, err := d.cli.ImageInspect(ctx, tag); err != nil {
		return sandbox.Image{}, engineError(ctx, "build "+tag+": image missing after a successful build", err)
	}
	img := sandbox.Image{Ref: tag, Duration: time.Since(start), Log: out.log.String(), Warnings: warnings}
	log.Info("built environment image", "duration", img.Duration.Round(time.Millisecond))
	return img, nil
}

// imageBuild posts the build and drains its message stream.
func (d *Engine) imageBuild(ctx context.Context, tag, hash string, tarball []byte, noCache, logDirs bool) (buildOutput, error) {
	labels := map[string]string{
		sandbox.LabelTool: "1",
		sandbox.LabelKind: "build",
		sandbox.LabelEnv:  hash,
		sandbox.LabelRun:  d.runID,
	}
	if logDirs {
		labels[sandbox.LabelLogDirs] = "1"
	}
	resp, err := d.cli.ImageBuild(ctx, bytes.NewReader(tarball), client.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true, // a failed RUN must not leave its container behind
		PullParent:  false,
		NoCache:     noCache,
		Version:     build.BuilderV1,
		Labels:      labels,
	})
	if err != nil {
		return buildOutput{log: sandbox.NewTail(buildLogMax)}, err
	}
	defer resp.Body.Close()
	return readBuildStream(resp.Body), nil
}

// isEngineSideBuildFailure reports whether a build error is the engine's,
// not the Dockerfile's: the engine could not set up the network of a RUN
// step (its bridge is missing or broken). Such a build would fail for any
// task; recording it as build_failed would drop good tasks.
func isEngineSideBuildFailure(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "failed to create endpoint") ||
		strings.Contains(m, "could not find bridge") ||
		strings.Contains(m, "failed to set up container networking")
}

// buildFailure classifies the end of a build: nil on success, the
// caller's cancellation, a *BuildError for the task's failures (timeout
// included) or an *InfraError.
func buildFailure(parent, ctx context.Context, tag string, timeout time.Duration, out buildOutput, postErr error) error {
	logText := out.log.String()
	switch {
	case parent.Err() != nil:
		return fmt.Errorf("build %s: %w", tag, parent.Err())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &sandbox.BuildError{Timeout: true, Offline: looksOffline(logText), Log: logText,
			Err: fmt.Errorf("no image after %s (build_timeout_sec)", timeout)}
	case postErr != nil && cerrdefs.IsInvalidArgument(postErr): // e.g. a Dockerfile parse error
		return &sandbox.BuildError{Log: postErr.Error(), Err: postErr}
	case postErr != nil:
		return engineError(ctx, "build "+tag, postErr)
	case out.errMsg != "" && (isOutOfDisk(out.errMsg) || isEngineSideBuildFailure(out.errMsg)):
		return infraError("build "+tag, errors.New(out.errMsg))
	case out.errMsg != "":
		return &sandbox.BuildError{Offline: looksOffline(logText), Log: logText, Err: errors.New(out.errMsg)}
	case out.streamErr != nil:
		return engineError(ctx, "build "+tag+": reading the build output", out.streamErr)
	}
	return nil
}

// buildOutput is what the JSON message stream of a build said.
type buildOutput struct {
	log       *sandbox.HeadTail // tail of the text output
	running   []string          // IDs of RUN-step containers, in order
	removed   map[string]bool   // IDs reported as removed
	errMsg    string            // the build's error, if it failed
	streamErr error             // the stream broke
}

// pending lists the step containers not reported as removed.
func (o buildOutput) pending() []string {
	var ids []string
	for _, id := range o.running {
		if !o.removed[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

var (
	runningInRE = regexp.MustCompile(`---> Running in ([0-9a-f]{12,64})`)
	removingRE  = regexp.MustCompile(`Removing intermediate container ([0-9a-f]{12,64})`)
)

// buildMessage is one message of the build stream (the classic builder
// writes "error" and "errorDetail" on failure, with err = nil from
// ImageBuild).
type buildMessage struct {
	Stream      string `json:"stream"`
	Status      string `json:"status"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// readBuildStream drains the whole stream.
func readBuildStream(r io.Reader) buildOutput {
	out := buildOutput{log: sandbox.NewTail(buildLogMax), removed: make(map[string]bool)}
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var m buildMessage
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) {
				out.streamErr = err
			}
			return out
		}
		text := m.Stream
		if text == "" && m.Status != "" {
			text = m.Status + "\n"
		}
		_, _ = io.WriteString(out.log, text)
		for _, mm := range runningInRE.FindAllStringSubmatch(text, -1) {
			out.running = append(out.running, mm[1])
		}
		for _, mm := range removingRE.FindAllStringSubmatch(text, -1) {
			out.removed[mm[1]] = true
		}
		msg := m.Error
		if msg == "" && m.ErrorDetail != nil {
			msg = m.ErrorDetail.Message
		}
		if msg != "" {
			out.errMsg = msg
			_, _ = io.WriteString(out.log, "ERROR: "+msg+"\n")
		}
	}
}

// removeBuildContainers force-removes step containers that may have
// outlived their build, waiting for a removal the engine already started.
func (d *Engine) removeBuildContainers(ctx context.Context, ids []string) {
	if len(ids) == 0 {
		return
	}
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	for _, id := range ids {
		for attempt := 0; ; attempt++ {
			_, err := d.cli.ContainerRemove(cctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			if err == nil {
				d.log.Info("removed a leftover build container", "container", id)
				break
			}
			if cerrdefs.IsNotFound(err) {
				break
			}
			if attempt >= 40 || cctx.Err() != nil {
				d.log.Warn("cannot remove a build container", "container", id, "err", err)
				break
			}
			time.Sleep(250 * time.Millisecond) // e.g. "removal already in progress"
		}
	}
}

// offlineMarkers are log fragments of a build that needed a network or a
// registry it could not reach.
var offlineMarkers = []string{
	"temporary failure resolving", "could not resolve", "temporary failure in name resolution",
	"name or service not known", "no such host", "dial tcp", "i/o timeout",
	"network is unreachable", "failed to establish a new connection", "could not connect to",
	"unable to connect to", "unable to resolve host", "eai_again", "enotfound", "failed to fetch",
	"pull access denied", "registry-1.docker.io", "manifest unknown", "repository does not exist",
	"error response from daemon: get https://", "toomanyrequests",
	"apk: not found", "apk: command not found", "apk add", "unable to select packages",
}

// looksOffline reports whether a failed build's log shows a network,
// registry or Alpine-on-a-Debian-stand-in failure.
func looksOffline(log string) bool {
	l := strings.ToLower(log)
	for _, m := range offlineMarkers {
		if strings.Contains(l, m) {
			return true
		}
	}
	return false
}

// baseImageWarnings notes FROM images that are local stand-ins (made by
// scripts/setup-docker.sh) or missing.
func (d *Engine) baseImageWarnings(ctx context.Context, files []bundle.Entry) []string {
	var dockerfile []byte
	for _, f := range files {
		if f.Name == "Dockerfile" {
			dockerfile = f.Data
		}
	}
	var warnings []string
	for _, ref := range fromImages(dockerfile) {
		res, err := d.cli.ImageInspect(ctx, ref)
		switch {
		case cerrdefs.IsNotFound(err):
			warnings = append(warnings, fmt.Sprintf("FROM %s: not present locally; the build will try to pull it", ref))
		case err == nil && res.Config != nil && res.Config.Labels[baseRecipeLabel] != "":
			suite := res.Config.Labels["otcurate.base.suite"]
			if suite == "" {
				suite = "a Debian"
			}
			warnings = append(warnings, fmt.Sprintf("FROM %s: mapped to the local otcurate base image (Debian %s rootfs)", ref, suite))
		}
	}
	return warnings
}

// fromImages lists the external images named by FROM lines, skipping
// earlier stage names, scratch and references with build arguments.
func fromImages(dockerfile []byte) []string {
	stages := map[string]bool{}
	var refs []string
	for _, line := range strings.Split(string(dockerfile), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		args := f[1:]
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		if len(args) == 0 {
			continue
		}
		ref := args[0]
		if ref != "scratch" && !strings.Contains(ref, "$") && !stages[strings.ToLower(ref)] {
			refs = append(refs, ref)
		}
		if len(args) >= 3 && strings.EqualFold(args[1], "AS") {
			stages[strings.ToLower(args[2])] = true
		}
	}
	return refs
}

// logDirsContext is the build-context directory withLogDirs adds.
const logDirsContext = ".otcurate-logdirs"

// withLogDirs bakes Harbor's /logs/{agent,verifier,artifacts} (mode 777)
// into the image: the context gets the three directories and the
// Dockerfile a final COPY (no shell needed in the image), so a sandbox
// starts without an engine copy. It reports false, and changes nothing,
// when the Dockerfile is not in memory or the name is taken.
func withLogDirs(files []bundle.Entry) ([]bundle.Entry, bool) {
	df := -1
	for i, f := range files {
		switch {
		case f.Name == logDirsContext || strings.HasPrefix(f.Name, logDirsContext+"/"):
			return files, false
		case f.Name == "Dockerfile" && f.Kind == bundle.KindFile && f.Open == nil:
			df = i
		}
	}
	if df < 0 {
		return files, false
	}
	out := make([]bundle.Entry, 0, len(files)+4)
	for _, f := range files {
		switch f.Name {
		case "Dockerfile":
			data := append(bytes.Clone(f.Data), "\n# added by otcurate: Harbor's log directories\nCOPY "+logDirsContext+"/ /logs/\n"...)
			f.Data = data
		case ".dockerignore":
			// Re-include the directories whatever the patterns exclude.
			f.Data = append(bytes.Clone(f.Data), "\n!"+logDirsContext+"\n!"+logDirsContext+"/**\n"...)
		}
		out = append(out, f)
	}
	out = append(out, bundle.Entry{Name: logDirsContext, Kind: bundle.KindDir, Mode: fs.ModeDir | 0o755})
	for _, dir := range sandbox.LogDirs {
		out = append(out, bundle.Entry{Name: logDirsContext + "/" + strings.TrimPrefix(dir, "logs/"), Kind: bundle.KindDir, Mode: fs.ModeDir | 0o777})
	}
	return out, true
}

// contextTar packs the environment files as a build context.
func contextTar(files []bundle.Entry) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, files); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeTar writes entries as an uncompressed tar: owned by root, modes
// kept, missing parent directories added (mode 0755).
func writeTar(w io.Writer, files []bundle.Entry) error {
	tw := tar.NewWriter(w)
	seen := map[string]bool{}
	epoch := time.Unix(0, 0)
	addDir := func(name string, mode int64) error {
		seen[name] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: epoch, Format: tar.FormatPAX})
	}
	var parents func(name string) error
	parents = func(name string) error {
		dir := path.Dir(name)
		if dir == "." || dir == "/" || seen[dir] {
			return nil
		}
		if err := parents(dir); err != nil {
			return err
		}
		return addDir(dir, 0o755)
	}
	for _, f := range files {
		name := path.Clean(strings.TrimPrefix(f.Name, "/"))
		if name == "." || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("bad member name %q", f.Name)
		}
		if err := parents(name); err != nil {
			return err
		}
		if err := writeTarEntry(tw, name, f, epoch); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if f.Kind == bundle.KindDir {
			seen[name] = true
		}
	}
	return tw.Close()
}

func writeTarEntry(tw *tar.Writer, name string, f bundle.Entry, mtime time.Time) error {
	hdr := &tar.Header{Name: name, Mode: int64(f.Mode.Perm()), ModTime: mtime, Format: tar.FormatPAX}
	switch f.Kind {
	case bundle.KindDir:
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
		return tw.WriteHeader(hdr)
	case bundle.KindSymlink:
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Linkname
		return tw.WriteHeader(hdr)
	case bundle.KindHardlink:
		hdr.Typeflag, hdr.Linkname = tar.TypeLink, f.Linkname
		return tw.WriteHeader(hdr)
	case bundle.KindFile:
		return writeTarFile(tw, hdr, f)
	}
	return fmt.Errorf("unsupported member kind %s", f.Kind)
}

func writeTarFile(tw *tar.Writer, hdr *tar.Header, f bundle.Entry) error {
	hdr.Typeflag = tar.TypeReg
	hdr.Size = int64(len(f.Data))
	if f.Open != nil {
		hdr.Size = f.Size
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	return copyEntry(tw, f)
}

// copyEntry writes a file entry's content: its Data, or f.Size bytes of
// what Open gives.
func copyEntry(w io.Writer, f bundle.Entry) error {
	if f.Open == nil {
		_, err := w.Write(f.Data)
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.CopyN(w, rc, f.Size)
	return err
}
