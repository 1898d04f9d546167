package kube

import (
	"math"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/otcurate/otcurate/sandbox"
)

// TestPodSpecLimits: the pod carries the task's storage bound as an
// ephemeral-storage limit, memory without wrapping, no privilege
// escalation and the dropped capabilities.
func TestPodSpecLimits(t *testing.T) {
	b := &Backend{o: Options{RequestRatio: 1, Loader: Containerd{}}}
	pod := b.podSpec(sandbox.StartSpec{Image: sandbox.Image{Ref: "img"},
		Resources: sandbox.Resources{CPUs: 2, MemoryMB: 1 << 20, StorageMB: 512}})
	c := pod.Spec.Containers[0]
	if q := c.Resources.Limits[corev1.ResourceEphemeralStorage]; q.Value() != 512<<20 {
		t.Errorf("ephemeral-storage limit %s, want 512Mi", q.String())
	}
	if q, ok := c.Resources.Requests[corev1.ResourceEphemeralStorage]; !ok || !q.IsZero() {
		t.Errorf("ephemeral-storage request %s (set %t), want an explicit 0 (the limit would be the request)", q.String(), ok)
	}
	if q := c.Resources.Limits[corev1.ResourceMemory]; q.Value() != 1<<40 {
		t.Errorf("memory limit %s, want 1Ti", q.String())
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil {
		t.Fatalf("security context %+v", sc)
	}
	for _, want := range []corev1.Capability{"MKNOD", "NET_RAW", "SETFCAP"} {
		if !slices.Contains(sc.Capabilities.Drop, want) {
			t.Errorf("capability %s not dropped: %v", want, sc.Capabilities.Drop)
		}
	}
	if got := mbBytes(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("mbBytes saturates: %d", got)
	}
}

func TestEvictedForStorage(t *testing.T) {
	cases := []struct {
		reason, msg string
		want        bool
	}{
		{"Evicted", "Pod ephemeral local storage usage exceeds the total limit of containers 512Mi.", true},
		{"Evicted", "Container sandbox exceeded its local ephemeral storage limit \"512Mi\".", true},
		{"Evicted", "The node was low on resource: memory.", false},
		{"", "", false},
	}
	for _, tc := range cases {
		p := &corev1.Pod{Status: corev1.PodStatus{Reason: tc.reason, Message: tc.msg}}
		if got := evictedForStorage(p); got != tc.want {
			t.Errorf("%q/%q: %v, want %v", tc.reason, tc.msg, got, tc.want)
		}
	}
}
