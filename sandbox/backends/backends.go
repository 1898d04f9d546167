// Package backends opens a sandbox.Backend from a spec (the --sandbox
// flag): one place that knows every backend, how its spec is written and
// which settings it reads from the environment. Help documents all of it.
package backends

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/daytona"
	"github.com/otcurate/otcurate/sandbox/docker"
	"github.com/otcurate/otcurate/sandbox/fake"
	"github.com/otcurate/otcurate/sandbox/helper"
	"github.com/otcurate/otcurate/sandbox/kube"
)

// Settings are what every backend needs besides its spec.
type Settings struct {
	RunID  string // label value for everything the backend creates
	Logger *slog.Logger
	// Getenv reads the backends' settings (see Help); nil means os.Getenv.
	Getenv func(string) string
}

func (s Settings) getenv(key string) string {
	if s.Getenv == nil {
		return os.Getenv(key)
	}
	return s.Getenv(key)
}

// SpecError is a mistake in the spec or in a backend's settings, as
// opposed to a backend that does not answer: the user must fix the
// command line or the environment.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

func specError(format string, a ...any) error { return &SpecError{Err: fmt.Errorf(format, a...)} }

// Open connects to the backend spec names (see Help for every form):
// "" or "docker" (the local engine), docker://ENDPOINT, an engine endpoint
// (unix://, tcp://, ssh://), a fleet HOST[=CAPACITY],..., "kube" or
// "daytona". Errors in the spec or settings are *SpecError.
func Open(ctx context.Context, spec string, s Settings) (sandbox.Backend, error) {
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case spec == "kube":
		return openKube(ctx, s)
	case spec == "daytona":
		o := daytona.Options{APIURL: s.getenv("DAYTONA_API_URL"), APIKey: s.getenv("DAYTONA_API_KEY"),
			Target: s.getenv("DAYTONA_TARGET"), RunID: s.RunID, Logger: s.Logger}
		o.Helper, o.HelperMissing = findHelper(s, "amd64")
		return backend(daytona.New(ctx, o))
	case spec == "fake":
		return backend(fake.New(fake.Options{RunID: s.RunID, Dir: s.getenv("OTCURATE_FAKE_DIR"), Log: s.Logger}))
	case strings.ContainsAny(spec, ",="):
		engines, err := docker.ParseFleet(spec)
		if err != nil {
			return nil, &SpecError{Err: fmt.Errorf("--sandbox: %w", err)}
		}
		return backend(docker.NewFleet(ctx, engines, s.RunID, s.Logger))
	}
	return backend(docker.New(ctx, docker.Options{Host: Endpoint(spec), RunID: s.RunID, Logger: s.Logger}))
}

// Endpoint is the Docker engine endpoint of a single-engine spec: "" for
// "" and "docker" (DOCKER_HOST or the default socket), ENDPOINT for
// docker://ENDPOINT (docker://HOST:PORT meaning tcp://HOST:PORT), and the
// spec itself otherwise (unix://, tcp://, ssh://).
func Endpoint(spec string) string {
	if spec == "docker" {
		return ""
	}
	rest, ok := strings.CutPrefix(spec, "docker://")
	if !ok {
		return spec
	}
	if rest != "" && !strings.Contains(rest, "://") {
		return "tcp://" + rest
	}
	return rest
}

// backend returns a constructor's result as an interface that is nil on
// error (not a typed nil pointer).
func backend[B sandbox.Backend](b B, err error) (sandbox.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// findHelper finds the sandbox helper for arch (see helper.Find); when it
// is missing, the reason, which the backend reports at start-up.
func findHelper(s Settings, arch string) (*helper.Binary, string) {
	b, err := helper.Find(s.getenv("OTCURATE_SANDBOX_HELPER"), arch)
	if err != nil {
		return nil, err.Error()
	}
	return b, ""
}

// openKube connects to the cluster the settings describe, with a local
// Docker engine as the image builder.
func openKube(ctx context.Context, s Settings) (sandbox.Backend, error) {
	o, err := kubeOptions(s)
	if err != nil {
		return nil, err
	}
	builder, err := docker.New(ctx, docker.Options{RunID: s.RunID, Logger: s.Logger})
	if err != nil {
		return nil, fmt.Errorf("kube backend: the image builder: %w", err)
	}
	o.Builder = builder
	var missing []string
	for _, arch := range []string{"amd64", "arm64"} {
		bin, why := findHelper(s, arch)
		if bin == nil {
			missing = append(missing, why)
			continue
		}
		if o.Helpers == nil {
			o.Helpers = map[string]*helper.Binary{}
		}
		o.Helpers[arch] = bin
	}
	if len(o.Helpers) == 0 {
		o.HelperMissing = strings.Join(missing, "; ")
	}
	b, err := kube.New(ctx, o)
	if err != nil {
		builder.Close()
		return nil, err
	}
	return &kubeWithBuilder{Backend: b, builder: builder}, nil
}

// kubeOptions reads the Kubernetes backend's settings (all but the
// builder).
func kubeOptions(s Settings) (kube.Options, error) {
	o := kube.Options{
		Kubeconfig: s.getenv("OTCURATE_KUBECONFIG"),
		Namespace:  s.getenv("OTCURATE_KUBE_NAMESPACE"),
		RunID:      s.RunID,
		Logger:     s.Logger,
	}
	switch sock, prefix := s.getenv("OTCURATE_KUBE_CONTAINERD"), s.getenv("OTCURATE_KUBE_REGISTRY"); {
	case sock != "" && prefix != "":
		return o, specError("--sandbox kube: set OTCURATE_KUBE_CONTAINERD or OTCURATE_KUBE_REGISTRY, not both")
	case sock != "":
		o.Loader = kube.Containerd{Address: sock}
	case prefix != "":
		o.Loader = kube.Registry{Prefix: prefix, User: s.getenv("OTCURATE_KUBE_REGISTRY_USER"), Password: s.getenv("OTCURATE_KUBE_REGISTRY_PASSWORD")}
	default:
		return o, specError("--sandbox kube: set OTCURATE_KUBE_CONTAINERD (a node's containerd socket) or OTCURATE_KUBE_REGISTRY (a registry prefix) to ship images; see otcurate help sandbox")
	}
	if v := s.getenv("OTCURATE_KUBE_REQUEST_RATIO"); v != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return o, specError("OTCURATE_KUBE_REQUEST_RATIO=%q: %w", v, err)
		}
		o.RequestRatio = f
	}
	if v := s.getenv("OTCURATE_KUBE_START_TIMEOUT"); v != "" {
		sec, err := strconv.Atoi(v)
		if err != nil {
			return o, specError("OTCURATE_KUBE_START_TIMEOUT=%q: %w", v, err)
		}
		o.StartTimeout = time.Duration(sec) * time.Second
	}
	return o, nil
}

// kubeWithBuilder closes the builder with the backend.
type kubeWithBuilder struct {
	*kube.Backend
	builder *docker.Engine
}

func (k *kubeWithBuilder) Close() error {
	return errors.Join(k.Backend.Close(), k.builder.Close())
}
