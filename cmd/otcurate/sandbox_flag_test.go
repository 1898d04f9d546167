package main

import (
	"strings"
	"testing"

	"github.com/otcurate/otcurate/sandbox/backends"
)

// TestSandboxFlag: --sandbox reaches the backends on every command that
// runs sandboxes, --docker-host still works as its alias, and a wrong spec
// or setting is a usage error before anything runs.
func TestSandboxFlag(t *testing.T) {
	t.Setenv("OTCURATE_KUBE_CONTAINERD", "")
	t.Setenv("OTCURATE_KUBE_REGISTRY", "")
	dir := t.TempDir()
	pool := "../../testdata/sample-pool.parquet"
	for _, flag := range []string{"--sandbox", "--docker-host"} {
		cases := [][]string{
			{"sandbox", "gc", flag, "tcp://127.0.0.1:1=0"},
			{"sandbox", "gc", flag, "kube"},
			{"run", "../../testdata/harbor-examples/hello-world", flag, "kube"},
			{"build", "--pool", pool, "-o", dir + "/o.parquet", "--run-dir", dir + "/b", "--stages", "validate,flaky", flag, "kube"},
			{"filter", "--stage", "flaky", "--in", pool, "-o", dir + "/f.parquet", "--run-dir", dir + "/f", flag, "kube"},
			{"train", "--data", pool, "--run-dir", dir + "/t", flag, "kube"},
			{"traces", "--data", pool, "-o", dir + "/s.parquet", flag, "kube"},
		}
		for _, args := range cases {
			if _, code := run(t, args...); code != exitUsage {
				t.Errorf("otcurate %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
			}
		}
	}
}

func TestHelpSandbox(t *testing.T) {
	out, code := run(t, "help", "sandbox")
	if code != 0 || !strings.Contains(out, backends.Help) || !strings.Contains(out, "gc") {
		t.Errorf("help sandbox: exit %d, output:\n%s", code, out)
	}
}
