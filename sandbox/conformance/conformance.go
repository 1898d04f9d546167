// Package conformance is the test suite every sandbox backend runs: the
// semantics of the sandbox contract (builds, exec, users, workdir, env,
// timeouts and cancellations that kill the whole process tree, capped
// output, uploads and
// downloads, the log directories, network isolation, terminals, Stop and
// GC), checked through the sandbox.Backend interface only, so Docker,
// Kubernetes, Daytona and the in-memory fake are held to one behaviour.
//
// A backend's test calls Run with a Harness. Where a backend legitimately
// differs (one output stream, isolation by policy), the Harness says so
// with a flag and the suite checks the documented variant instead; every
// other check is the same for all.
package conformance

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// Harness is what the suite needs of a backend.
type Harness struct {
	// Backend returns a backend that labels what it starts with a fresh
	// run id, and that id. The suite calls it once for the subtests that
	// share a backend and once more for each subtest that needs a run of
	// its own (GC). Closing the backend and checking for leftovers is the
	// caller's business (t.Cleanup).
	Backend func(t *testing.T) (sandbox.Backend, string)
	// BaseImage is the image the suite's Dockerfiles start FROM, e.g.
	// "debian:bookworm": a Debian-like image with bash, coreutils, procps
	// (ps), util-linux (setsid, setpriv), passwd (useradd), tar and tmux.
	BaseImage string

	// CombinedOutput: the backend returns stderr inside Stdout, in order,
	// and Stderr stays empty (the Daytona toolbox has one output stream).
	// The suite then checks stderr's bytes in Stdout.
	CombinedOutput bool
	// TimeoutLosesOutput: a timed-out exec returns no output (the Daytona
	// toolbox answers a timeout with HTTP 408 and no body). The suite then
	// checks TimedOut and the kill only, not the output printed before.
	TimeoutLosesOutput bool
	// NetworkProbe is "host:port" of a TCP service a sandbox started with
	// Network reaches. When set, the suite checks that a sandbox with
	// Network connects to it and one without cannot; when empty, it checks
	// that a sandbox without Network has no interface but lo (a backend
	// that isolates by policy, like Kubernetes' deny-all NetworkPolicy,
	// keeps its interfaces and must give a probe).
	NetworkProbe string
	// NetworkUnenforced, when set, says why this deployment cannot keep a
	// sandbox without Network off the probe (e.g. a Kubernetes CNI that
	// does not implement NetworkPolicy): the suite then logs what such a
	// sandbox reaches instead of failing. Only a test cluster should set it.
	NetworkUnenforced string
	// HostProcesses: the sandbox's processes are visible in this host's
	// /proc (a local Docker engine, the fake). The suite then also checks
	// that Stop kills processes left in the background, which no API of
	// a stopped sandbox can show.
	HostProcesses bool
}

// Run runs the suite as subtests of t. Most subtests share one backend and
// one image (built before they start) and run in parallel, each in
// sandboxes of its own.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Backend == nil || h.BaseImage == "" {
		t.Fatal("conformance: the harness needs Backend and BaseImage")
	}
	b, _ := h.Backend(t)
	s := &suite{h: h, b: b}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img, err := b.Build(ctx, s.env(fixtureDockerfile(h.BaseImage)))
	if err != nil {
		t.Fatalf("building the suite's image: %v", err)
	}
	s.img = img

	t.Run("Build", s.testBuild)
	t.Run("Exec", s.testExec)
	t.Run("BrokenShell", s.testBrokenShell)
	t.Run("Users", s.testUsers)
	t.Run("Workdir", s.testWorkdir)
	t.Run("Env", s.testEnv)
	t.Run("Timeout", s.testTimeout)
	t.Run("Cancel", s.testCancel)
	t.Run("Output", s.testOutput)
	t.Run("Files", s.testFiles)
	t.Run("LogDirs", s.testLogDirs)
	t.Run("Network", s.testNetwork)
	t.Run("Terminal", s.testTerminal)
	t.Run("Stop", s.testStop)
	t.Run("GC", s.testGC)
}

// The suite's image: a non-root user, a WORKDIR holding a file, an ENV.
const (
	user      = "conformer"
	userUID   = "4242"
	userHome  = "/home/" + user
	workdir   = "/srv/work"
	imageVar  = "CONFORMANCE_IMAGE"
	imageVal  = "from-image"
	helloFile = "hello.txt"
)

func fixtureDockerfile(base string) string {
	return "FROM " + base + "\n" +
		"RUN useradd -m -u " + userUID + " " + user + " && mkdir -p " + workdir + " && echo hi > " + workdir + "/" + helloFile + "\n" +
		"ENV " + imageVar + "=" + imageVal + "\n" +
		"WORKDIR " + workdir + "\n"
}

type suite struct {
	h   Harness
	b   sandbox.Backend // shared by the subtests
	img sandbox.Image   // of fixtureDockerfile, built on b
}

// env is the environment of one Dockerfile, hashed by content.
func (s *suite) env(dockerfile string) sandbox.Environment {
	files := []bundle.Entry{{Name: "Dockerfile", Kind: bundle.KindFile, Mode: 0o644, Data: []byte(dockerfile)}}
	sum := sha256.Sum256([]byte(dockerfile))
	return sandbox.Environment{Hash: hex.EncodeToString(sum[:]), Files: files, BuildTimeout: 3 * time.Minute, Task: "conformance"}
}

// start starts a sandbox of the suite's image on b that the test stops at
// its end (a Stop error fails the test).
func start(t *testing.T, b sandbox.Backend, spec sandbox.StartSpec) sandbox.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := b.Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if sb.ID() == "" {
		t.Error("the sandbox has no ID")
	}
	t.Cleanup(func() {
		if err := sb.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return sb
}

// sandbox starts a sandbox of the suite's image with spec's other fields.
func (s *suite) sandbox(t *testing.T, spec sandbox.StartSpec) sandbox.Sandbox {
	t.Helper()
	spec.Image = s.img
	return start(t, s.b, spec)
}

// run executes a command that must not fail at the infrastructure level
// (30 s unless the request sets a timeout).
func run(t *testing.T, sb sandbox.Sandbox, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	if req.Timeout == 0 {
		req.Timeout = 30 * time.Second
	}
	res, err := sb.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Cmd, err)
	}
	return res
}

// stdout runs a command that must exit 0 and returns its stdout.
func stdout(t *testing.T, sb sandbox.Sandbox, req sandbox.ExecRequest) string {
	t.Helper()
	res := run(t, sb, req)
	if res.ExitCode != 0 || res.TimedOut {
		t.Errorf("%q as %q: exit %d timed out %v; stdout %q stderr %q", req.Cmd, req.User, res.ExitCode, res.TimedOut, res.Stdout, res.Stderr)
	}
	return string(res.Stdout)
}

// marker is a fresh number that makes a process's argv, or a Dockerfile,
// unique: "1001.4821" for sleep's argument.
func marker(base int) string {
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%d.%04d", base, binary.BigEndian.Uint32(b[:])%10000)
}
