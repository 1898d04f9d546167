package backends

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox/docker"
	"github.com/otcurate/otcurate/sandbox/kube"
)

func TestEndpoint(t *testing.T) {
	cases := map[string]string{
		"":                            "",
		"docker":                      "",
		"docker://":                   "",
		"docker://unix:///run/d.sock": "unix:///run/d.sock",
		"docker://10.0.0.2:2376":      "tcp://10.0.0.2:2376",
		"docker://ssh://me@host":      "ssh://me@host",
		"unix:///var/run/docker.sock": "unix:///var/run/docker.sock",
		"tcp://10.0.0.2:2376":         "tcp://10.0.0.2:2376",
		"ssh://me@host:2222":          "ssh://me@host:2222",
	}
	for spec, want := range cases {
		if got := Endpoint(spec); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", spec, got, want)
		}
	}
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestKubeOptions(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		wantErr string // "" = no error
		check   func(kube.Options) bool
	}{
		{name: "no loader", env: nil, wantErr: "set OTCURATE_KUBE_CONTAINERD"},
		{name: "both loaders", env: map[string]string{"OTCURATE_KUBE_CONTAINERD": "/run/c.sock", "OTCURATE_KUBE_REGISTRY": "r:5000"}, wantErr: "not both"},
		{name: "containerd", env: map[string]string{"OTCURATE_KUBE_CONTAINERD": "/run/c.sock", "OTCURATE_KUBE_NAMESPACE": "ns", "OTCURATE_KUBECONFIG": "/k"},
			check: func(o kube.Options) bool {
				return o.Loader == kube.Containerd{Address: "/run/c.sock"} && o.Namespace == "ns" && o.Kubeconfig == "/k" && o.RunID == "r1"
			}},
		{name: "registry", env: map[string]string{"OTCURATE_KUBE_REGISTRY": "r:5000/x", "OTCURATE_KUBE_REGISTRY_USER": "u", "OTCURATE_KUBE_REGISTRY_PASSWORD": "p",
			"OTCURATE_KUBE_REQUEST_RATIO": " 0.5 ", "OTCURATE_KUBE_START_TIMEOUT": "60"},
			check: func(o kube.Options) bool {
				return o.Loader == kube.Registry{Prefix: "r:5000/x", User: "u", Password: "p"} && o.RequestRatio == 0.5 && o.StartTimeout == time.Minute
			}},
		{name: "bad ratio", env: map[string]string{"OTCURATE_KUBE_REGISTRY": "r", "OTCURATE_KUBE_REQUEST_RATIO": "half"}, wantErr: "OTCURATE_KUBE_REQUEST_RATIO"},
		{name: "bad timeout", env: map[string]string{"OTCURATE_KUBE_REGISTRY": "r", "OTCURATE_KUBE_START_TIMEOUT": "1m"}, wantErr: "OTCURATE_KUBE_START_TIMEOUT"},
	}
	for _, c := range cases {
		o, err := kubeOptions(Settings{RunID: "r1", Getenv: env(c.env)})
		var se *SpecError
		switch {
		case c.wantErr != "" && (!errors.As(err, &se) || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: err = %v, want a *SpecError with %q", c.name, err, c.wantErr)
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.check != nil && !c.check(o):
			t.Errorf("%s: options %+v", c.name, o)
		}
	}
}

// TestOpenSpecErrors: mistakes in the spec or settings are *SpecError and
// are found before any backend is contacted.
func TestOpenSpecErrors(t *testing.T) {
	for _, spec := range []string{"kube", "tcp://127.0.0.1:1=0", "tcp://127.0.0.1:1=x,unix:///nope=2", ","} {
		b, err := Open(context.Background(), spec, Settings{Getenv: env(nil)})
		var se *SpecError
		if !errors.As(err, &se) || b != nil {
			t.Errorf("Open(%q) = %v, %v; want a *SpecError", spec, b, err)
		}
	}
}

// TestOpenUnreachableEngine: an engine that does not answer is an
// infrastructure error, not a spec error, and the backend is a nil
// interface.
func TestOpenUnreachableEngine(t *testing.T) {
	b, err := Open(context.Background(), "docker://unix:///nonexistent/docker.sock", Settings{})
	var se *SpecError
	if err == nil || errors.As(err, &se) || b != nil {
		t.Fatalf("Open = %v, %v; want a non-spec error and a nil backend", b, err)
	}
}

// TestHelpNamesEverySetting: every environment variable the backends read
// is documented in Help.
func TestHelpNamesEverySetting(t *testing.T) {
	src, err := os.ReadFile("backends.go")
	if err != nil {
		t.Fatal(err)
	}
	vars := []string{docker.SSHFlagsEnv, "DOCKER_HOST", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"}
	for _, m := range regexp.MustCompile(`getenv\("([A-Z_]+)"\)`).FindAllSubmatch(src, -1) {
		vars = append(vars, string(m[1]))
	}
	if len(vars) < 14 {
		t.Fatalf("found only %d settings: %v", len(vars), vars)
	}
	for _, v := range vars {
		if !strings.Contains(Help, v) {
			t.Errorf("Help does not document %s", v)
		}
	}
	for _, form := range []string{"docker", "unix://", "tcp://", "ssh://", "docker://", "HOST[=CAPACITY]", "kube", "daytona", "fake"} {
		if !strings.Contains(Help, form) {
			t.Errorf("Help does not document the spec form %s", form)
		}
	}
}
