package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/otcurate/otcurate/sandbox"
)

// defaultMaxOutput is what ExecRequest.MaxOutput 0 keeps per stream.
const defaultMaxOutput = 1 << 20

// streams checks an exec's stdout and stderr; with CombinedOutput the
// stderr bytes are expected after stdout's in Stdout.
func (s *suite) streams(t *testing.T, res sandbox.ExecResult, out, errOut string) {
	t.Helper()
	wantOut, wantErr := out, errOut
	if s.h.CombinedOutput {
		wantOut, wantErr = out+errOut, ""
	}
	if string(res.Stdout) != wantOut || string(res.Stderr) != wantErr {
		t.Errorf("stdout %q stderr %q, want %q and %q", res.Stdout, res.Stderr, wantOut, wantErr)
	}
}

// testExec: exit codes, the two streams, bash -c semantics (a script of
// several lines, bash syntax), the measured duration.
func (s *suite) testExec(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	res := run(t, sb, sandbox.ExecRequest{Cmd: "echo out; echo err >&2; exit 7"})
	if res.ExitCode != 7 || res.TimedOut || res.Truncated {
		t.Errorf("exit %d timed out %v truncated %v, want exit 7", res.ExitCode, res.TimedOut, res.Truncated)
	}
	s.streams(t, res, "out\n", "err\n")
	if res := run(t, sb, sandbox.ExecRequest{Cmd: "true"}); res.ExitCode != 0 || len(res.Stdout)+len(res.Stderr) != 0 {
		t.Errorf("true: %+v", res)
	}
	if res := run(t, sb, sandbox.ExecRequest{Cmd: "exit 1"}); res.ExitCode != 1 {
		t.Errorf("exit 1: exit code %d", res.ExitCode)
	}
	script := "x=1\nif [[ $x == 1 && -n $BASH_VERSION ]]; then\n  a=(p q r)\n  echo \"${#a[@]} ${a[2]}\"\nfi\nset -o pipefail; false | true; echo pipe=$?\n"
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: script}); out != "3 r\npipe=1\n" {
		t.Errorf("bash script: %q, want %q", out, "3 r\npipe=1\n")
	}
	if res := run(t, sb, sandbox.ExecRequest{Cmd: "sleep 0.3"}); res.Duration < 300*time.Millisecond || res.Duration > 20*time.Second {
		t.Errorf("sleep 0.3 took %s by the result", res.Duration)
	}
}

// testBrokenShell: once something in the sandbox removed the shell that
// Exec runs through, an exec is a failed command (exit 126 or 127, as the
// Docker engine reports an exec it could not start), never an error: an
// agent that breaks its sandbox must not pass for an infrastructure
// failure.
func (s *suite) testBrokenShell(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	if res := run(t, sb, sandbox.ExecRequest{Cmd: "rm -f /usr/bin/bash /bin/bash", User: "root"}); res.ExitCode != 0 {
		t.Fatalf("rm bash: exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	res, err := sb.Exec(context.Background(), sandbox.ExecRequest{Cmd: "true", Timeout: time.Minute})
	if err != nil {
		t.Fatalf("exec after bash was removed: %v (infrastructure %v), want exit 126 or 127", err, sandbox.IsInfra(err))
	}
	if res.ExitCode != 126 && res.ExitCode != 127 {
		t.Errorf("exec after bash was removed: exit %d, want 126 or 127\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// testUsers: root by default; a user by name (from the Dockerfile) or by
// uid:gid, with its HOME and groups, keeping the image's environment.
func (s *suite) testUsers(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	cases := []struct{ user, want string }{
		{"", "root 0 0 /root"},
		{"root", "root 0 0 /root"},
		{user, user + " " + userUID + " " + userUID + " " + userHome},
		{"nobody", "nobody 65534 65534 /nonexistent"},
		{userUID + ":" + userUID, user + " " + userUID + " " + userUID},
	}
	for _, c := range cases {
		cmd := `echo "$(id -un) $(id -u) $(id -g) $HOME"`
		if strings.Contains(c.user, ":") { // HOME is the engine's business for a bare uid
			cmd = `echo "$(id -un) $(id -u) $(id -g)"`
		}
		if out := stdout(t, sb, sandbox.ExecRequest{Cmd: cmd, User: c.user}); out != c.want+"\n" {
			t.Errorf("as %q: %q, want %q", c.user, out, c.want)
		}
	}
	// The image's environment (ENV, PATH) reaches another user.
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: `echo "$` + imageVar + `"; command -v bash`, User: user}); out != imageVal+"\n/usr/bin/bash\n" && out != imageVal+"\n/bin/bash\n" {
		t.Errorf("environment as %s: %q", user, out)
	}
	// The user owns what it creates.
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "touch /tmp/by-user && stat -c %U /tmp/by-user", User: user}); out != user+"\n" {
		t.Errorf("owner of a file %s created: %q", user, out)
	}
}

// testWorkdir: the image's WORKDIR by default, StartSpec.Workdir over it,
// ExecRequest.Workdir over both, for root and another user.
func (s *suite) testWorkdir(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "pwd; cat " + helloFile}); out != workdir+"\nhi\n" {
		t.Errorf("image WORKDIR: %q", out)
	}
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "pwd", User: user}); out != workdir+"\n" {
		t.Errorf("image WORKDIR as %s: %q", user, out)
	}
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "pwd", Workdir: "/tmp"}); out != "/tmp\n" {
		t.Errorf("request workdir: %q", out)
	}
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: "pwd", Workdir: "/tmp", User: user}); out != "/tmp\n" {
		t.Errorf("request workdir as %s: %q", user, out)
	}
	other := s.sandbox(t, sandbox.StartSpec{Workdir: "/opt"})
	if out := stdout(t, other, sandbox.ExecRequest{Cmd: "pwd"}); out != "/opt\n" {
		t.Errorf("StartSpec.Workdir: %q", out)
	}
	if out := stdout(t, other, sandbox.ExecRequest{Cmd: "pwd", Workdir: "/tmp"}); out != "/tmp\n" {
		t.Errorf("request workdir over StartSpec.Workdir: %q", out)
	}
}

// testEnv: the image's ENV, StartSpec.Env and ExecRequest.Env merge, the
// request winning; values arrive byte for byte, for root and another user.
func (s *suite) testEnv(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{Env: map[string]string{"CONF_START": "from-start", "CONF_OVER": "start"}})
	tricky := `a b'c "q" $x ` + "`y` \\ ;"
	req := sandbox.ExecRequest{Cmd: `printf '%s|' "$` + imageVar + `" "$CONF_START" "$CONF_REQ" "$CONF_OVER"`,
		Env: map[string]string{"CONF_REQ": tricky, "CONF_OVER": "request"}}
	want := imageVal + "|from-start|" + tricky + "|request|"
	for _, u := range []string{"", user} {
		req.User = u
		if out := stdout(t, sb, req); out != want {
			t.Errorf("env as %q: %q, want %q", u, out, want)
		}
	}
	if out := stdout(t, sb, sandbox.ExecRequest{Cmd: `echo "${CONF_REQ-unset}"`}); out != "unset\n" {
		t.Errorf("a request's variable outlived the request: %q", out)
	}
}

// testTimeout: a command over its timeout is a TimedOut result (not an
// error) returned soon, with the output so far, and nothing it started
// survives: background children, a subshell's orphan, a new session, for
// root and another user.
func (s *suite) testTimeout(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	m := func(base int) string { return "sleep " + marker(base) }
	cases := []struct {
		user    string
		sleeps  []string
		command func(sl []string) string
	}{
		{"", []string{m(1001), m(1002), m(1003), m(1004)}, func(sl []string) string {
			return fmt.Sprintf("%s & (%s &); setsid %s & %s", sl[0], sl[1], sl[2], sl[3])
		}},
		{user, []string{m(1005), m(1006), m(1007)}, func(sl []string) string {
			return fmt.Sprintf("%s & env -i /bin/%s & %s", sl[0], sl[1], sl[2])
		}},
	}
	for _, c := range cases {
		t0 := time.Now()
		res := run(t, sb, sandbox.ExecRequest{Cmd: "echo started; " + c.command(c.sleeps), User: c.user, Timeout: time.Second})
		took := time.Since(t0)
		if !res.TimedOut || !s.h.TimeoutLosesOutput && !bytes.HasPrefix(res.Stdout, []byte("started\n")) {
			t.Errorf("as %q: timed out %v, stdout %q; want TimedOut and the output so far", c.user, res.TimedOut, res.Stdout)
		}
		if took > 15*time.Second {
			t.Errorf("as %q: a 1 s timeout returned after %s", c.user, took)
		}
		if left := running(t, sb, c.sleeps); left != "" {
			t.Errorf("as %q: processes survived the timeout:\n%s", c.user, left)
		}
	}
	// A command within its timeout is not TimedOut.
	if res := run(t, sb, sandbox.ExecRequest{Cmd: "sleep 0.1", Timeout: 10 * time.Second}); res.TimedOut || res.ExitCode != 0 {
		t.Errorf("a quick command: %+v", res)
	}
}

// testCancel: an exec whose context ends returns the context's error soon
// (not an infrastructure error), and the command is killed, at the latest
// a few seconds later.
func (s *suite) testCancel(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	sl := "sleep " + marker(1021)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	t0 := time.Now()
	_, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: sl + " & " + sl, Timeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) || sandbox.IsInfra(err) {
		t.Errorf("err = %v, want the context's error", err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("Exec returned %s after a 1 s context", took)
	}
	deadline := time.Now().Add(10 * time.Second)
	for left := running(t, sb, []string{sl}); left != ""; left = running(t, sb, []string{sl}) {
		if time.Now().After(deadline) {
			t.Errorf("processes still run 10 s after the cancel:\n%s", left)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// running lists the processes in sb whose args contain one of the
// commands (ps, as root).
func running(t *testing.T, sb sandbox.Sandbox, commands []string) string {
	t.Helper()
	var pats []string
	for _, c := range commands {
		// "[s]leep 1001[.]4821" matches the process, not this grep.
		pats = append(pats, "-e '["+c[:1]+"]"+strings.ReplaceAll(c[1:], ".", "[.]")+"'")
	}
	return strings.TrimSpace(string(run(t, sb, sandbox.ExecRequest{Cmd: "ps -eo pid,user,args | grep " + strings.Join(pats, " ") + " || true"}).Stdout))
}

// testOutput: each stream keeps at most MaxOutput bytes, head and tail,
// with Truncated; output that fits is whole; MaxOutput 0 keeps 1 MiB.
func (s *suite) testOutput(t *testing.T) {
	t.Parallel()
	sb := s.sandbox(t, sandbox.StartSpec{})
	res := run(t, sb, sandbox.ExecRequest{Cmd: "printf HEAD; head -c 100000 /dev/zero | tr '\\0' x; printf TAIL; echo small >&2", MaxOutput: 1000})
	if !res.Truncated || res.ExitCode != 0 {
		t.Errorf("100 kB with MaxOutput 1000: truncated %v exit %d", res.Truncated, res.ExitCode)
	}
	tail, errOut := "xTAIL", "small\n"
	if s.h.CombinedOutput {
		tail, errOut = "small\n", ""
	}
	if !bytes.HasPrefix(res.Stdout, []byte("HEADx")) || !bytes.HasSuffix(res.Stdout, []byte(tail)) || len(res.Stdout) > 1000 {
		t.Errorf("kept %d bytes (at most 1000), head %q, tail %q; want the head and the tail %q",
			len(res.Stdout), clip(res.Stdout, true), clip(res.Stdout, false), tail)
	}
	if string(res.Stderr) != errOut {
		t.Errorf("stderr %q, want %q", res.Stderr, errOut)
	}
	res = run(t, sb, sandbox.ExecRequest{Cmd: "head -c 1000 /dev/zero | tr '\\0' y", MaxOutput: 1000})
	if res.Truncated || len(res.Stdout) != 1000 {
		t.Errorf("1000 bytes with MaxOutput 1000: kept %d, truncated %v", len(res.Stdout), res.Truncated)
	}
	res = run(t, sb, sandbox.ExecRequest{Cmd: "printf START; head -c 1500000 /dev/zero | tr '\\0' z; printf END"})
	if !res.Truncated || len(res.Stdout) > defaultMaxOutput || len(res.Stdout) < defaultMaxOutput-16 ||
		!bytes.HasPrefix(res.Stdout, []byte("STARTz")) || !bytes.HasSuffix(res.Stdout, []byte("zEND")) {
		t.Errorf("1.5 MB with the default cap: kept %d bytes (want 1 MiB), truncated %v, head %q, tail %q",
			len(res.Stdout), res.Truncated, clip(res.Stdout, true), clip(res.Stdout, false))
	}
}

// clip is the first or last 16 bytes of b, for messages.
func clip(b []byte, head bool) []byte {
	if len(b) <= 16 {
		return b
	}
	if head {
		return b[:16]
	}
	return b[len(b)-16:]
}
