package agent

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otcurate/otcurate/sandbox"
)

// promptMark precedes every shell prompt (PS1 and PS2). It is an ASCII
// record separator: it never appears in ordinary output, so the harness
// can tell when the shell is waiting for input and stop waiting early,
// and it is removed before the policy sees the output.
const promptMark = '\x1e'

// shellCmd is the persistent shell: interactive, no readline (the
// terminal's own line discipline echoes and edits, so no escape sequences
// are produced), no rc files (the task's image decides the environment).
var shellCmd = []string{"bash", "--noediting", "--noprofile", "--norc", "-i"}

// Shell is a persistent interactive shell on a terminal in the sandbox:
// the same semantics as the tmux pane of the reference harness
// (keystrokes verbatim, state kept between commands, Ctrl-C works), but
// without a tmux binary in the image and without a round trip per key.
type Shell struct {
	term sandbox.Terminal

	mu      sync.Mutex
	buf     []byte // output not yet returned, capped (head and tail)
	dropped int    // bytes dropped from the middle of buf
	prompts int    // prompt marks seen in buf
	closed  error  // the read error that ended the stream
	notify  chan struct{}
}

// maxPending bounds the output buffered between two observations.
const maxPending = 1 << 20

// OpenShell starts the shell as user in workdir.
func OpenShell(ctx context.Context, sb sandbox.Sandbox, user, workdir string) (*Shell, error) {
	term, err := sb.OpenTerminal(ctx, sandbox.TerminalSpec{
		Cmd: shellCmd, User: user, Workdir: workdir,
		Env: map[string]string{
			"PS1":  string(promptMark) + `\u@sandbox:\w\$ `,
			"PS2":  string(promptMark) + "> ",
			"TERM": "dumb", "PROMPT_COMMAND": "", "HISTFILE": "/dev/null",
			"DEBIAN_FRONTEND": "noninteractive", "PAGER": "cat", "GIT_PAGER": "cat",
		},
	})
	if err != nil {
		return nil, err
	}
	s := &Shell{term: term, notify: make(chan struct{}, 1)}
	go s.pump()
	return s, nil
}

// pump copies terminal output into the buffer.
func (s *Shell) pump() {
	p := make([]byte, 32<<10)
	for {
		n, err := s.term.Read(p)
		s.mu.Lock()
		if n > 0 {
			chunk := p[:n]
			s.prompts += strings.Count(string(chunk), string(promptMark))
			s.buf = append(s.buf, chunk...)
			if over := len(s.buf) - maxPending; over > 0 {
				// Keep the first and last halves; the observation is
				// truncated to far less than this anyway.
				half := maxPending / 2
				s.dropped += over
				s.buf = append(s.buf[:half], s.buf[len(s.buf)-half:]...)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errShellExited
			}
			s.closed = err
		}
		s.mu.Unlock()
		select {
		case s.notify <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

var errShellExited = errors.New("the shell exited")

// Wait waits until at least want prompts have been printed since the last
// Take (want < 0: never), the stream ends, or max passes.
func (s *Shell) Wait(ctx context.Context, want int, max time.Duration) error {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		got, closed := s.prompts, s.closed
		s.mu.Unlock()
		if closed != nil {
			return closed
		}
		if want >= 0 && got >= want {
			return nil
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Take returns (and forgets) the output since the last Take, cleaned for
// display: prompt marks removed, CRLF as LF, escape sequences stripped.
func (s *Shell) Take() string {
	s.mu.Lock()
	out, dropped := s.buf, s.dropped
	s.buf, s.dropped, s.prompts = nil, 0, 0
	s.mu.Unlock()
	text := clean(string(out))
	if dropped > 0 {
		half := len(text) / 2
		text = text[:half] + "\n[... " + strconv.Itoa(dropped) + " bytes of output dropped ...]\n" + text[half:]
	}
	return text
}

// Send types keystrokes and waits for them to finish: at most max, less
// when the shell prints as many prompts as the keystrokes hold Enter
// presses (each line, even a heredoc line, ends with a PS1 or PS2 prompt).
func (s *Shell) Send(ctx context.Context, keys []byte, max time.Duration) error {
	want := strings.Count(string(keys), "\n") + strings.Count(string(keys), "\r")
	if len(keys) == 1 && keys[0] == 0x03 { // Ctrl-C: bash prints a fresh prompt
		want = 1
	}
	s.mu.Lock()
	base := s.prompts
	s.mu.Unlock()
	if len(keys) > 0 {
		if _, err := s.term.Write(keys); err != nil {
			return err
		}
	}
	if want == 0 {
		return s.Wait(ctx, -1, max)
	}
	return s.Wait(ctx, base+want, max)
}

// Close ends the shell and everything it started.
func (s *Shell) Close() error { return s.term.Close() }

var escapes = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// clean makes raw terminal output readable: prompt marks dropped, line
// ends normalised, ANSI escapes removed, carriage-return overwrites
// (progress bars) resolved to what the line finally shows.
func clean(s string) string {
	s = strings.ReplaceAll(s, string(promptMark), "")
	s = escapes.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if !strings.Contains(s, "\r") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if j := strings.LastIndex(strings.TrimRight(l, "\r"), "\r"); j >= 0 {
			lines[i] = l[j+1:]
		} else {
			lines[i] = strings.TrimRight(l, "\r")
		}
	}
	return strings.Join(lines, "\n")
}
