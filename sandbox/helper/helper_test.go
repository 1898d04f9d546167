package helper

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
	"github.com/otcurate/otcurate/sandbox/helper/op"
)

var helperDir string // the helper, built by TestMain

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "helper-test-")
	if err != nil {
		panic(err)
	}
	helperDir = dir
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, FileName(runtime.GOARCH)), "github.com/otcurate/otcurate/cmd/otcurate-sandbox-helper")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestFind(t *testing.T) {
	bin := filepath.Join(helperDir, FileName(runtime.GOARCH))
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	script := filepath.Join(t.TempDir(), "script")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	dynamic, _ := exec.LookPath("sh") // the host's, dynamically linked
	cases := []struct {
		name, env, arch, wantErr string
	}{
		{"directory", helperDir, runtime.GOARCH, ""},
		{"file", bin, runtime.GOARCH, ""},
		{"wrong arch", bin, other, "the sandbox is " + other},
		{"missing in the directory", helperDir, "riscv64", "no such file"},
		{"not ELF", script, runtime.GOARCH, "not an ELF"},
		{"dynamic", dynamic, runtime.GOARCH, "dynamically linked"},
		{"missing", "/nonexistent", runtime.GOARCH, EnvVar},
		{"beside the test binary", "", runtime.GOARCH, "make build"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Find(c.env, c.arch)
			if c.wantErr == "" {
				if err != nil || len(b.Data) == 0 || b.Arch != c.arch {
					t.Fatalf("= %v, %v", b, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want %q", err, c.wantErr)
			}
		})
	}
}

// nsRunner runs the helper on this host in a fresh PID namespace (its
// kill pass must never see the host's processes), input through stdin.
func nsRunner(t *testing.T) Runner {
	if os.Geteuid() != 0 {
		t.Skip("needs root (unshare)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	bin := filepath.Join(helperDir, FileName(runtime.GOARCH))
	return func(ctx context.Context, args []string, input []byte, fresh bool) ([]byte, error) {
		if input != nil {
			args = append(args, "-in", "-")
		}
		cmd := exec.CommandContext(ctx, "unshare", append([]string{"--pid", "--fork", "--mount-proc", "--", bin}, args...)...)
		cmd.Stdin = strings.NewReader(string(input))
		return cmd.Output()
	}
}

func TestIsolation(t *testing.T) {
	iso := Isolation{Run: nsRunner(t)}
	ctx := context.Background()
	d := t.TempDir()
	if err := iso.KillAll(ctx); err != nil {
		t.Fatal(err)
	}
	tests := filepath.Join(d, "tests")
	os.MkdirAll(filepath.Join(tests, "old"), 0o755)
	os.WriteFile(filepath.Join(tests, "conftest.py"), []byte("planted"), 0o644)
	files := []bundle.Entry{
		{Name: "test.sh", Kind: bundle.KindFile, Mode: 0o755, Data: []byte("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")},
		{Name: "data", Kind: bundle.KindDir, Mode: 0o755},
		{Name: "data/in.txt", Kind: bundle.KindFile, Mode: 0o644, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("input")), nil
		}},
	}
	if err := iso.ResetDir(ctx, tests, 0o755, files); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(tests)
	if len(ents) != 2 {
		t.Fatalf("tests/ holds %v", ents)
	}
	if b, err := iso.ReadFile(ctx, filepath.Join(tests, "data/in.txt"), 3, true); err != nil || string(b) != "put" {
		t.Fatalf("read tail = %q %v", b, err)
	}
	if _, err := iso.ReadFile(ctx, filepath.Join(tests, "nope"), 3, false); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	os.Symlink("/etc/hostname", filepath.Join(d, "reward.txt"))
	if _, err := iso.ReadFile(ctx, filepath.Join(d, "reward.txt"), 10, false); !errors.Is(err, sandbox.ErrNotRegular) {
		t.Fatalf("symlink: %v", err)
	}
	if err := iso.ResetDir(ctx, "/", 0o755, nil); err == nil {
		t.Fatal("reset / accepted")
	}
}

// TestIsolationRejectsForgedAnswers: output that does not end in the
// frame of this call's nonce is an error, never a reward.
func TestIsolationRejectsForgedAnswers(t *testing.T) {
	ctx := context.Background()
	for name, out := range map[string]string{
		"a fixed nonce":   "\n" + op.Magic + " 0000 ok MQ== 0000\n",
		"plain text":      "1\n",
		"an exit message": "",
	} {
		t.Run(name, func(t *testing.T) {
			iso := Isolation{Run: func(context.Context, []string, []byte, bool) ([]byte, error) { return []byte(out), nil }}
			if b, err := iso.ReadFile(ctx, "/logs/verifier/reward.txt", 10, false); err == nil || !errors.Is(err, op.ErrNoFrame) {
				t.Fatalf("= %q %v", b, err)
			}
		})
	}
	// The real nonce, echoed back by a Runner that saw the arguments (a
	// fake helper), is what the frame cannot prevent: the Runner's job is
	// to run the real helper.
	iso := Isolation{Run: func(_ context.Context, args []string, _ []byte, _ bool) ([]byte, error) {
		return []byte("\n" + op.Magic + " " + args[0] + " ok MQ== " + args[0] + "\n"), nil
	}}
	if b, err := iso.ReadFile(ctx, "/x", 10, false); err != nil || string(b) != "1" {
		t.Fatalf("= %q %v", b, err)
	}
}

// TestIsolationFailedSeesEveryFailure: a backend's Failed hook sees an
// answer without the frame and the Runner's own error, for every call,
// and what it returns is what the caller gets (the Kubernetes backend
// makes them a *sandbox.TamperedError once the agent ran).
func TestIsolationFailedSeesEveryFailure(t *testing.T) {
	ctx := context.Background()
	runErr := errors.New("install: exit 1")
	for name, run := range map[string]Runner{
		"no frame":     func(context.Context, []string, []byte, bool) ([]byte, error) { return []byte("1\n"), nil },
		"runner error": func(context.Context, []string, []byte, bool) ([]byte, error) { return nil, runErr },
	} {
		t.Run(name, func(t *testing.T) {
			var seen []error
			iso := Isolation{Run: run, Failed: func(err error) error {
				seen = append(seen, err)
				return &sandbox.TamperedError{Err: err}
			}}
			errs := []error{iso.KillAll(ctx), iso.ResetDir(ctx, "/tests", 0o755, nil)}
			_, err := iso.ReadFile(ctx, "/logs/verifier/reward.txt", 10, false)
			errs = append(errs, err)
			_, err = iso.Snapshot(ctx)
			errs = append(errs, err)
			for i, err := range errs {
				if !sandbox.IsTampered(err) {
					t.Errorf("call %d: %v, want the hook's TamperedError", i, err)
				}
			}
			if len(seen) != 4 {
				t.Fatalf("the hook saw %d failures, want 4", len(seen))
			}
			for _, err := range seen {
				if !errors.Is(err, op.ErrNoFrame) && !errors.Is(err, runErr) {
					t.Errorf("the hook saw %v", err)
				}
			}
		})
	}
}
