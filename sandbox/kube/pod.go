package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/otcurate/otcurate/sandbox"
)

// containerName is the sandbox container of every pod.
const containerName = "sandbox"

// entrypointSettle: as on Docker, an image ENTRYPOINT is watched this long
// for an immediate exit.
const entrypointSettle = time.Second

// Start implements sandbox.Backend: it creates the pod, waits until its
// container runs, creates the log directories and waits for the
// healthcheck. On any failure the pod is deleted before Start returns.
func (b *Backend) Start(ctx context.Context, spec sandbox.StartSpec) (sandbox.Sandbox, error) {
	if spec.Image.Ref == "" {
		return nil, errors.New("start: no image")
	}
	b.mu.Lock()
	entrypoint := b.entrypoints[spec.Image.Ref] // false for an image this process did not ship
	b.mu.Unlock()
	if !spec.Network {
		b.ensureNetworkPolicy(ctx)
	}
	pod := b.podSpec(spec)
	created, err := b.api.pods(b.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, infra(apiKind(err), "create pod: %w", err)
	}
	s := &podSandbox{b: b, name: created.Name, workdir: spec.Workdir, storageMB: spec.Resources.StorageMB}
	if err := s.boot(ctx, created, spec, entrypoint); err != nil {
		if stopErr := s.Stop(ctx); stopErr != nil {
			b.log.Warn("cannot delete a pod that failed to start", "pod", s.name, "err", stopErr)
		}
		return nil, err
	}
	s.baseline = s.snapshot(ctx)
	b.log.Debug("sandbox started", "pod", s.name, "image", spec.Image.Ref)
	return s, nil
}

// apiKind classifies an API error.
func apiKind(err error) string {
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		return "capacity"
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return "capacity"
	}
	return "engine_error"
}

// podSpec translates a StartSpec. The labels select (tool, kind, run,
// network); the exact values, with the caller's labels, go into
// annotations, since label values are restricted.
func (b *Backend) podSpec(spec sandbox.StartSpec) *corev1.Pod {
	ann := make(map[string]string, len(spec.Labels)+4)
	maps.Copy(ann, spec.Labels)
	ann[sandbox.LabelRun] = b.o.RunID
	ann[sandbox.LabelOwner] = sandbox.OwnerID()
	labels := map[string]string{
		sandbox.LabelTool: "1",
		sandbox.LabelKind: "sandbox",
		sandbox.LabelRun:  labelValue(b.o.RunID),
	}
	if !spec.Network {
		labels[labelNetwork] = "none"
	}
	if v := labelValue(spec.Labels[sandbox.LabelEnv]); v != "" {
		labels[sandbox.LabelEnv] = v
	}
	keys := make([]string, 0, len(spec.Env))
	for k := range spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env []corev1.EnvVar
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: spec.Env[k]})
	}
	res := corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}}
	if c := spec.Resources.CPUs; c > 0 {
		res.Limits[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(c*1000), resource.DecimalSI)
		res.Requests[corev1.ResourceCPU] = *resource.NewMilliQuantity(max(int64(c*1000*b.o.RequestRatio), 1), resource.DecimalSI)
	}
	if m := spec.Resources.MemoryMB; m > 0 {
		res.Limits[corev1.ResourceMemory] = *resource.NewQuantity(mbBytes(m), resource.BinarySI)
		res.Requests[corev1.ResourceMemory] = *resource.NewQuantity(max(int64(float64(mbBytes(m))*b.o.RequestRatio), 1<<20), resource.BinarySI)
	}
	if st := spec.Resources.StorageMB; st > 0 {
		// The kubelet evicts a pod past its ephemeral-storage limit (the
		// writable layer, logs and emptyDirs together).
		res.Limits[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(mbBytes(st), resource.BinarySI)
		// An explicit zero request: without one the request defaults to
		// the limit, and a node whose free disk is below one task's bound
		// (Harbor's default storage_mb is 10 GiB) could schedule no pod.
		// The limit is enforced; the scheduler reserves no disk, as it did
		// before storage_mb was honoured.
		res.Requests[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(0, resource.BinarySI)
	}
	no, share, grace := false, true, int64(1)
	pullPolicy := corev1.PullIfNotPresent
	if b.o.Loader.NodeLocal() {
		pullPolicy = corev1.PullNever
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "otcurate-sb-", Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			ShareProcessNamespace:         &share, // the pause process is PID 1 and reaps zombies (Docker's --init)
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           spec.Image.Ref,
				ImagePullPolicy: pullPolicy,
				Args:            []string{"sleep", "infinity"}, // the image ENTRYPOINT is kept
				WorkingDir:      spec.Workdir,
				Env:             env,
				Resources:       res,
				SecurityContext: securityContext(),
			}},
		},
	}
}

// boot waits for the container to run, then prepares the sandbox.
func (s *podSandbox) boot(ctx context.Context, created *corev1.Pod, spec sandbox.StartSpec, entrypoint bool) error {
	if err := s.waitRunning(ctx, created); err != nil {
		return err
	}
	if entrypoint && spec.Healthcheck == nil {
		if err := s.pause(ctx, entrypointSettle); err != nil {
			return err
		}
	}
	if err := s.makeLogDirs(ctx); err != nil {
		if exited := s.exitedSettled(ctx); exited != nil {
			return exited
		}
		return err
	}
	if spec.Healthcheck != nil {
		return sandbox.WaitHealthy(ctx, spec.Healthcheck, s.Exec, s.pause, s.exitedError)
	}
	return nil
}

// waitRunning watches the pod until its container runs, fails, or the
// start timeout passes.
func (s *podSandbox) waitRunning(ctx context.Context, pod *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, s.b.o.StartTimeout)
	defer cancel()
	pods := s.b.api.pods(s.b.ns)
	last := pod
	for {
		if done, err := s.b.startState(last); done {
			return err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + s.name, ResourceVersion: last.ResourceVersion})
		if err != nil {
			return s.b.startWaitError(ctx, last, err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				w.Stop()
				return infra("engine_error", "pod %s was deleted while starting", s.name)
			}
			if p, ok := ev.Object.(*corev1.Pod); ok {
				last = p
				if done, err := s.b.startState(p); done {
					w.Stop()
					return err
				}
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return s.b.startWaitError(ctx, last, ctx.Err())
		}
		// The watch ended (server timeout): read the pod again and go on.
		p, err := pods.Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			return s.b.startWaitError(ctx, last, err)
		}
		last = p
	}
}

// startWaitError explains why waiting for a pod ended early.
func (b *Backend) startWaitError(ctx context.Context, p *corev1.Pod, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return infra("start_timeout", "pod %s not running after %s: %s", p.Name, b.o.StartTimeout, pendingReason(p))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return infra("engine_error", "watch pod %s: %w", p.Name, err)
}

// Waiting reasons of a container that mean the node cannot run the image:
// infrastructure (the image was not shipped, the runtime failed), never
// the task's fault.
var infraWaiting = map[string]bool{
	"ErrImageNeverPull": true, "ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "PreCreateHookError": true,
}

// startState reports whether a starting pod reached a verdict: running
// (nil), a task defect (*HealthcheckError: its entrypoint exited or cannot
// run) or an infrastructure failure.
func (b *Backend) startState(p *corev1.Pod) (bool, error) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != containerName {
			continue
		}
		switch {
		case cs.State.Running != nil:
			return true, nil
		case cs.State.Terminated != nil:
			return true, terminatedError(cs.State.Terminated)
		case cs.State.Waiting != nil && infraWaiting[cs.State.Waiting.Reason]:
			return true, infra("engine_error", "pod %s: %s: %s", p.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		return true, infra("engine_error", "pod %s failed: %s: %s", p.Name, p.Status.Reason, p.Status.Message)
	}
	return false, nil
}

// terminatedError is the *HealthcheckError of a container that stopped
// (or never ran its entrypoint).
func terminatedError(t *corev1.ContainerStateTerminated) error {
	msg := strings.TrimSpace(t.Message)
	he := &sandbox.HealthcheckError{Exited: true, ExitCode: int(t.ExitCode), Output: msg}
	if t.Reason == "StartError" || t.Reason == "ContainerCannotRun" {
		he.ExitCode = -1
		he.Err = fmt.Errorf("%s: %s", t.Reason, msg)
	}
	return he
}

// pendingReason summarises why a pod is not running yet.
func pendingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("not scheduled (%s: %s)", c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Waiting != nil {
			return fmt.Sprintf("container waiting (%s: %s)", cs.State.Waiting.Reason, cs.State.Waiting.Message)
		}
	}
	return "phase " + string(p.Status.Phase)
}

// exitedError returns the *HealthcheckError of a sandbox whose container
// is no longer running, nil while it runs.
func (s *podSandbox) exitedError(ctx context.Context) error {
	p, err := s.b.api.pods(s.b.ns).Get(context.WithoutCancel(ctx), s.name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return &sandbox.HealthcheckError{Exited: true, ExitCode: -1, Err: errors.New("pod deleted")}
		}
		return nil
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Terminated != nil {
			return terminatedError(cs.State.Terminated)
		}
	}
	return nil
}

// statusLag bounds how long the pod status may take to show that a
// container the runtime already reports gone has terminated (the kubelet
// updates the status asynchronously; seen taking over a second).
const statusLag = 5 * time.Second

// exitedSettled is exitedError after a failure that suggests the
// container is gone: it waits up to statusLag for the pod status to say
// so, and returns nil when the container still runs.
func (s *podSandbox) exitedSettled(ctx context.Context) error {
	deadline := time.Now().Add(statusLag)
	for {
		if err := s.exitedError(ctx); err != nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// pause waits for d, and fails early when the container has exited.
func (s *podSandbox) pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.exitedError(ctx)
}

// securityContext is every sandbox container's: no privilege escalation
// (no-new-privileges) and sandbox.DroppedCapabilities dropped.
func securityContext() *corev1.SecurityContext {
	no := false
	drop := make([]corev1.Capability, 0, len(sandbox.DroppedCapabilities))
	for _, c := range sandbox.DroppedCapabilities {
		drop = append(drop, corev1.Capability(c))
	}
	return &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: drop}}
}

// mbBytes converts megabytes to bytes, saturating instead of wrapping.
func mbBytes(mb int64) int64 {
	if mb > math.MaxInt64>>20 {
		return math.MaxInt64
	}
	return mb << 20
}

// LimitExceeded implements sandbox.LimitWatcher: a pod the kubelet evicted
// for its ephemeral storage exceeded the task's storage_mb. The answer is
// kept once found; a pod already deleted (after Stop) reports what was
// found before.
func (s *podSandbox) LimitExceeded() *sandbox.LimitError {
	if s.storageMB <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit != nil || s.stopped {
		return s.limit
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := s.b.api.pods(s.b.ns).Get(ctx, s.name, metav1.GetOptions{})
	if err == nil && evictedForStorage(p) {
		s.limit = &sandbox.LimitError{Resource: "storage", LimitMB: s.storageMB}
	}
	return s.limit
}

// evictedForStorage reports a pod the kubelet evicted for its ephemeral
// storage ("Pod ephemeral local storage usage exceeds the total limit of
// containers 512Mi.", or a container's "ephemeral local storage usage
// exceeds").
func evictedForStorage(p *corev1.Pod) bool {
	return p.Status.Reason == "Evicted" && strings.Contains(strings.ToLower(p.Status.Message), "ephemeral")
}
