package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/docker"
	"github.com/otcurate/otcurate/sandbox/kube"
)

// kubeHelp documents the Kubernetes backend's configuration (environment
// variables, like the Daytona backend's, so every command that takes
// --docker-host gets it without more flags).
const kubeHelp = `--docker-host kube runs every sandbox as a pod on Kubernetes.

Images are built by a Docker engine (DOCKER_HOST or the local socket), then
shipped to the cluster:
  OTCURATE_KUBE_CONTAINERD=SOCKET  import into the node's containerd (single
                                   node; pods never pull), or
  OTCURATE_KUBE_REGISTRY=PREFIX    push to PREFIX/otcurate-env:<hash>
                                   (OTCURATE_KUBE_REGISTRY_USER, _PASSWORD).
The cluster:
  OTCURATE_KUBECONFIG (else in-cluster, else KUBECONFIG or ~/.kube/config)
  OTCURATE_KUBE_NAMESPACE          (default: the kubeconfig's, else default)
  OTCURATE_KUBE_REQUEST_RATIO      requests = this share of the limits (default 1)
  OTCURATE_KUBE_START_TIMEOUT      seconds a pod may stay pending (default 300)
Sandboxes without network get a deny-all NetworkPolicy (enforced where the
CNI implements NetworkPolicy). See deploy/README.md for sharded builds as an
Indexed Job.`

func newKubeHelpCmd() *cobra.Command {
	return &cobra.Command{Use: "kube", Short: "The Kubernetes sandbox backend (--docker-host kube)", Long: kubeHelp}
}

// newKubeBackend connects to the cluster the environment describes.
func newKubeBackend(cmd *cobra.Command, g *globals, runID string) (sandbox.Backend, error) {
	o := kube.Options{
		Kubeconfig: os.Getenv("OTCURATE_KUBECONFIG"),
		Namespace:  os.Getenv("OTCURATE_KUBE_NAMESPACE"),
		RunID:      runID,
		Logger:     g.logger,
	}
	switch sock, prefix := os.Getenv("OTCURATE_KUBE_CONTAINERD"), os.Getenv("OTCURATE_KUBE_REGISTRY"); {
	case sock != "" && prefix != "":
		return nil, usageErr(fmt.Errorf("--docker-host kube: set OTCURATE_KUBE_CONTAINERD or OTCURATE_KUBE_REGISTRY, not both"))
	case sock != "":
		o.Loader = kube.Containerd{Address: sock}
	case prefix != "":
		o.Loader = kube.Registry{Prefix: prefix, User: os.Getenv("OTCURATE_KUBE_REGISTRY_USER"), Password: os.Getenv("OTCURATE_KUBE_REGISTRY_PASSWORD")}
	default:
		return nil, usageErr(fmt.Errorf("--docker-host kube: set OTCURATE_KUBE_CONTAINERD (a node's containerd socket) or OTCURATE_KUBE_REGISTRY (a registry prefix) to ship images; see otcurate help kube"))
	}
	if v := os.Getenv("OTCURATE_KUBE_REQUEST_RATIO"); v != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, usageErr(fmt.Errorf("OTCURATE_KUBE_REQUEST_RATIO=%q: %w", v, err))
		}
		o.RequestRatio = f
	}
	if v := os.Getenv("OTCURATE_KUBE_START_TIMEOUT"); v != "" {
		sec, err := strconv.Atoi(v)
		if err != nil {
			return nil, usageErr(fmt.Errorf("OTCURATE_KUBE_START_TIMEOUT=%q: %w", v, err))
		}
		o.StartTimeout = time.Duration(sec) * time.Second
	}
	builder, err := docker.New(cmd.Context(), docker.Options{RunID: runID, Logger: g.logger})
	if err != nil {
		return nil, fmt.Errorf("kube backend: the image builder: %w", err)
	}
	o.Builder = builder
	b, err := kube.New(cmd.Context(), o)
	if err != nil {
		builder.Close()
		return nil, err
	}
	return &kubeWithBuilder{Backend: b, builder: builder}, nil
}

// kubeWithBuilder closes the builder with the backend.
type kubeWithBuilder struct {
	*kube.Backend
	builder *docker.Engine
}

func (k *kubeWithBuilder) Close() error {
	k.Backend.Close()
	return k.builder.Close()
}
