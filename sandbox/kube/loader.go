package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/otcurate/otcurate/sandbox/docker"
)

// ImageLoader ships an image built by the Docker builder to the cluster
// and returns the reference pods use.
type ImageLoader interface {
	// Load makes local (an image on the builder) runnable by the cluster.
	// again forces the transfer even when the cluster seems to have it.
	Load(ctx context.Context, builder *docker.Engine, local string, again bool) (string, error)
	// NodeLocal reports whether images exist only on the nodes (pods then
	// never pull: imagePullPolicy Never).
	NodeLocal() bool
}

// Containerd imports images into a node's containerd (the CRI runtime of
// a single-node or kind-like cluster): `docker save` from the builder,
// streamed into `ctr images import` in the k8s.io namespace. The ctr
// binary ships with containerd; the Go client of containerd would pin a
// server version and weighs more than the one command it replaces here.
type Containerd struct {
	Address   string // containerd socket, e.g. /run/otcurate-kube/containerd.sock
	Namespace string // default k8s.io (the CRI plugin's)
	Ctr       string // default "ctr"
}

// NodeLocal implements ImageLoader.
func (c Containerd) NodeLocal() bool { return true }

func (c Containerd) ctr(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	ns, bin := c.Namespace, c.Ctr
	if ns == "" {
		ns = "k8s.io"
	}
	if bin == "" {
		bin = "ctr"
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"--address", c.Address, "--namespace", ns}, args...)...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// Load implements ImageLoader.
func (c Containerd) Load(ctx context.Context, builder *docker.Engine, local string, again bool) (string, error) {
	name := NormalizeRef(local)
	if !again {
		out, err := c.ctr(ctx, nil, "images", "ls", "-q", "name=="+name)
		if err != nil {
			return "", infra("engine_unavailable", "containerd at %s: %w", c.Address, err)
		}
		if strings.TrimSpace(string(out)) == name {
			return local, nil
		}
	}
	rc, err := builder.SaveImage(ctx, local)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	if _, err := c.ctr(ctx, rc, "images", "import", "-"); err != nil {
		return "", infra("engine_error", "import %s into containerd at %s: %w", local, c.Address, err)
	}
	return local, nil
}

// Registry pushes images to a registry the cluster pulls from:
// PREFIX/otcurate-env:<hash>.
type Registry struct {
	Prefix         string // e.g. registry.example.com:5000/team
	User, Password string
}

// NodeLocal implements ImageLoader.
func (r Registry) NodeLocal() bool { return false }

// Load implements ImageLoader. The engine skips layers the registry has.
func (r Registry) Load(ctx context.Context, builder *docker.Engine, local string, again bool) (string, error) {
	target := strings.TrimRight(r.Prefix, "/") + "/" + local
	if err := builder.PushImage(ctx, local, target, r.User, r.Password); err != nil {
		return "", err
	}
	return target, nil
}

// NormalizeRef is the fully qualified name containerd stores for a Docker
// short reference: otcurate-env:abc → docker.io/library/otcurate-env:abc.
func NormalizeRef(ref string) string {
	first, _, hasSlash := strings.Cut(ref, "/")
	switch {
	case !hasSlash:
		ref = "docker.io/library/" + ref
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		ref = "docker.io/" + ref
	}
	if last := ref[strings.LastIndex(ref, "/")+1:]; !strings.Contains(last, ":") && !strings.Contains(last, "@") {
		ref += ":latest"
	}
	return ref
}
