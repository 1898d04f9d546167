// Package kube is a sandbox.Backend on Kubernetes (k8s.io/client-go): one
// pod per sandbox, commands and files through the pods/exec API, limits
// from task.toml, labels and a janitor. Images are built by a Docker engine
// (the same content-addressed builds as the Docker backend) and shipped to
// the cluster by an ImageLoader: imported into a node's containerd, or
// pushed to a registry the user names.
//
// What a sandbox means is the Docker backend's: the image ENTRYPOINT is
// kept and the command becomes `sleep infinity`; /logs/{agent,verifier,
// artifacts} exist with mode 777; the healthcheck has passed; an exec that
// times out is killed whole. Pod start failures that are not the task's
// fault (unschedulable past the start timeout, image missing on the node,
// sandbox creation errors) are sandbox.InfraError; an entrypoint that exits
// is a *sandbox.HealthcheckError, as on Docker.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/docker"
	"github.com/otcurate/otcurate/sandbox/helper"
)

// Options configure the backend.
type Options struct {
	// Kubeconfig is the kubeconfig file; "" means in-cluster when running
	// in a pod, else $KUBECONFIG or ~/.kube/config.
	Kubeconfig string
	// Namespace for the sandbox pods; "" means the kubeconfig context's
	// (or the pod's own namespace in-cluster), else "default".
	Namespace string
	RunID     string
	Logger    *slog.Logger
	// Builder builds environment images (a local Docker engine).
	Builder *docker.Engine
	// Loader ships a built image to the cluster.
	Loader ImageLoader
	// StartTimeout bounds scheduling plus container start (default 5 min):
	// a pod still pending then is an infrastructure error (capacity).
	StartTimeout time.Duration
	// RequestRatio sets the pods' cpu and memory requests to this share of
	// their limits (default 1: guaranteed QoS, honest scheduling; lower it
	// to overcommit a small node).
	RequestRatio float64
	// NoNetworkPolicy skips the deny-all NetworkPolicy that isolates
	// sandboxes without network (it is enforced only by CNIs that
	// implement NetworkPolicy).
	NoNetworkPolicy bool
	// QPS and Burst of the API client (defaults 50 and 100; client-go's
	// own 5/10 throttles a few hundred concurrent sandboxes).
	QPS   float32
	Burst int
	// Helpers are the static sandbox helpers by GOARCH (the node's
	// kubernetes.io/arch label picks one). Empty: the verifier-isolation
	// methods run the image's bash and coreutils (sandbox.ShellIsolation)
	// and New warns; HelperMissing says why.
	Helpers       map[string]*helper.Binary
	HelperMissing string
	// HelperTimeout bounds one call of the helper: writing it (the image's
	// mkdir and install) and running it (default 2 min). An image tool the
	// agent replaced by one that never returns then scores the attempt 0
	// instead of holding the trial forever.
	HelperTimeout time.Duration
}

// Backend is the Kubernetes sandbox.Backend.
type Backend struct {
	o    Options
	api  *apiClient
	rest *rest.Config
	ns   string
	log  *slog.Logger

	mu          sync.Mutex
	loads       map[string]*loadCall // by local image ref
	entrypoints map[string]bool      // by cluster image ref: the image has an ENTRYPOINT
	policy      bool                 // deny-all NetworkPolicy ensured
}

// loadCall is one shipping of a local image (with the one inspection of
// its ENTRYPOINT), shared by concurrent Builds.
type loadCall struct {
	done chan struct{}
	ref  string
	err  error
}

var _ sandbox.Backend = (*Backend)(nil)

// New connects to the cluster (one API call checks it).
func New(ctx context.Context, o Options) (*Backend, error) {
	if o.Builder == nil {
		return nil, errors.New("kube: no image builder (a Docker engine builds the environments)")
	}
	if o.Loader == nil {
		return nil, errors.New("kube: no image loader (--kube-load containerd:SOCKET or --kube-registry PREFIX)")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HelperTimeout <= 0 {
		o.HelperTimeout = 2 * time.Minute
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 5 * time.Minute
	}
	if o.RequestRatio <= 0 || o.RequestRatio > 1 {
		o.RequestRatio = 1
	}
	if o.QPS <= 0 {
		o.QPS = 50
	}
	if o.Burst <= 0 {
		o.Burst = 100
	}
	cfg, ns, err := restConfig(o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	if o.Namespace != "" {
		ns = o.Namespace
	}
	api, err := newAPIClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	b := &Backend{o: o, api: api, rest: cfg, ns: ns, log: o.Logger.With("backend", "kube", "namespace", ns),
		loads: map[string]*loadCall{}, entrypoints: map[string]bool{}}
	if _, err := api.pods(ns).List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: sandbox.LabelTool + "=1"}); err != nil {
		return nil, &sandbox.InfraError{Kind: "engine_unavailable", Err: fmt.Errorf("kube: list pods in %s: %w", ns, err)}
	}
	if len(o.Helpers) == 0 {
		b.log.Warn("no sandbox helper: the verifier's isolation runs the image's bash and coreutils, which an agent can replace ("+
			helper.EnvVar+"; see otcurate help sandbox)", "reason", o.HelperMissing)
	}
	return b, nil
}

// restConfig finds the cluster: an explicit kubeconfig, else in-cluster,
// else the default loading rules.
func restConfig(path string) (*rest.Config, string, error) {
	if path == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			ns := "default"
			if data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(data) > 0 {
				ns = strings.TrimSpace(string(data))
			}
			return cfg, ns, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return cfg, ns, nil
}

// Namespace is where the sandbox pods go.
func (b *Backend) Namespace() string { return b.ns }

// Build implements sandbox.Backend: the Docker builder's image, shipped to
// the cluster once per process and image (concurrent callers share it).
func (b *Backend) Build(ctx context.Context, env sandbox.Environment) (sandbox.Image, error) {
	img, err := b.o.Builder.Build(ctx, env)
	if err != nil {
		return img, err
	}
	t0 := time.Now()
	ref, err := b.load(ctx, img.Ref, env.Rebuild)
	if err != nil {
		return sandbox.Image{}, err
	}
	img.Ref = ref
	img.Duration += time.Since(t0) // shipping is part of getting the environment ready
	return img, nil
}

// load ships a local image at most once per process (unless rebuilt) and
// records whether it has an ENTRYPOINT, for Start.
func (b *Backend) load(ctx context.Context, local string, again bool) (string, error) {
	b.mu.Lock()
	c, ok := b.loads[local]
	if ok && again {
		select {
		case <-c.done:
			ok = false // a finished load: redo it for the rebuilt image
		default:
		}
	}
	if !ok {
		c = &loadCall{done: make(chan struct{})}
		b.loads[local] = c
		b.mu.Unlock()
		lctx := context.WithoutCancel(ctx)
		entrypoint, err := b.o.Builder.HasEntrypoint(lctx, local)
		if err == nil {
			c.ref, err = b.o.Loader.Load(lctx, b.o.Builder, local, again)
		}
		c.err = err
		b.mu.Lock()
		if err != nil {
			delete(b.loads, local) // let a later caller retry
		} else {
			b.entrypoints[c.ref] = entrypoint
		}
		b.mu.Unlock()
		close(c.done)
		return c.ref, c.err
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.ref, c.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// GC implements sandbox.Backend: it deletes otcurate's pods in the
// namespace that the options select, then runs the builder's janitor
// (images imported into nodes stay: the kubelet's image GC owns them).
func (b *Backend) GC(ctx context.Context, opts sandbox.GCOptions) (sandbox.GCReport, error) {
	sel := sandbox.LabelTool + "=1"
	if opts.Run != "" {
		sel += "," + sandbox.LabelRun + "=" + labelValue(opts.Run)
	}
	pods, err := b.api.pods(b.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return sandbox.GCReport{}, &sandbox.InfraError{Kind: "engine_unavailable", Err: fmt.Errorf("kube: list pods: %w", err)}
	}
	var rep sandbox.GCReport
	var errs []error
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil ||
			opts.ExceptRun != "" && p.Annotations[sandbox.LabelRun] == opts.ExceptRun ||
			opts.OrphansOnly && sandbox.OwnerAlive(p.Annotations[sandbox.LabelOwner]) {
			continue
		}
		zero := int64(0)
		err := b.api.pods(b.ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete pod %s: %w", p.Name, err))
			continue
		}
		rep.Containers = append(rep.Containers, p.Name)
	}
	// The builder's leftovers (build containers of a killed run; images
	// with opts.Images).
	r, err := b.o.Builder.GC(ctx, opts)
	rep.Containers = append(rep.Containers, r.Containers...)
	rep.Networks, rep.Images = r.Networks, r.Images
	errs = append(errs, err)
	return rep, errors.Join(errs...)
}

// Close implements sandbox.Backend. The builder belongs to the caller.
func (b *Backend) Close() error { return nil }

// ensureNetworkPolicy creates, once, a NetworkPolicy that denies all
// ingress and egress of the pods labelled otcurate.network=none. A
// cluster that does not allow it (RBAC) gets a warning, not a failure.
func (b *Backend) ensureNetworkPolicy(ctx context.Context) {
	b.mu.Lock()
	done := b.policy
	b.policy = true
	b.mu.Unlock()
	if done || b.o.NoNetworkPolicy {
		return
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "otcurate-sandbox-no-network", Labels: map[string]string{sandbox.LabelTool: "1"}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelNetwork: "none"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	err := b.api.createNetworkPolicy(ctx, b.ns, np)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		b.log.Warn("cannot create the deny-all NetworkPolicy; sandboxes get the pod network", "err", err)
	}
}

// labelNetwork marks pods that must have no network.
const labelNetwork = "otcurate.network"

// labelValue makes s a valid label value (at most 63 characters of
// [A-Za-z0-9._-], alphanumeric at both ends). The exact value goes into an
// annotation of the same key.
func labelValue(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	v := sb.String()
	if len(v) > 63 {
		v = v[:63]
	}
	return strings.Trim(v, "._-")
}

// infra is an infrastructure error of the given kind.
func infra(kind string, format string, args ...any) error {
	return &sandbox.InfraError{Kind: kind, Err: fmt.Errorf(format, args...)}
}
