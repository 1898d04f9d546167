package kube

import (
	"slices"
	"testing"

	"github.com/otcurate/otcurate/sandbox"
)

func TestLabelValue(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"run-1", "run-1"},
		{"host:42", "host_42"},
		{"pymethods/task 7", "pymethods_task_7"},
		{"-edge.", "edge"},
		{"x" + string(make([]byte, 70)), "x"}, // NULs become _, then trimmed
	} {
		if got := labelValue(c.in); got != c.want || len(got) > 63 {
			t.Errorf("labelValue(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"otcurate-env:abc":              "docker.io/library/otcurate-env:abc",
		"otcurate/base-bookworm":        "docker.io/otcurate/base-bookworm:latest",
		"localhost:5000/team/env:1":     "localhost:5000/team/env:1",
		"registry.example.com/env@sha1": "registry.example.com/env@sha1",
	} {
		if got := NormalizeRef(in); got != want {
			t.Errorf("NormalizeRef(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestArgv(t *testing.T) {
	cmd := []string{"bash", "-c", "true"}
	for _, c := range []struct {
		user, wd string
		want     []string
	}{
		{"", "", []string{"env", "OTCURATE_EXEC=m", "bash", "-c", "true"}},
		{"root", "/app", []string{"env", "-C", "/app", "OTCURATE_EXEC=m", "bash", "-c", "true"}},
		{"agent", "", append(append([]string{}, sandbox.AsUserArgv("agent")...), "env", "OTCURATE_EXEC=m", "bash", "-c", "true")},
		{"1000", "", []string{"setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups", "env", "OTCURATE_EXEC=m", "bash", "-c", "true"}},
		{"1000:50", "", []string{"setpriv", "--reuid", "1000", "--regid", "50", "--clear-groups", "env", "OTCURATE_EXEC=m", "bash", "-c", "true"}},
	} {
		if got := argv(c.user, c.wd, nil, "m", cmd); !slices.Equal(got, c.want) {
			t.Errorf("argv(%q, %q) = %q, want %q", c.user, c.wd, got, c.want)
		}
	}
}
