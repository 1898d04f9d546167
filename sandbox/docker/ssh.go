package docker

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/sandbox"
)

// SSHFlagsEnv holds extra ssh(1) flags for ssh:// engines (space
// separated), e.g. "-i /keys/fleet -o StrictHostKeyChecking=accept-new".
// Everything else (keys, agents, jump hosts) comes from ssh's own
// configuration, as with `docker -H ssh://...`.
const SSHFlagsEnv = "OTCURATE_SSH_FLAGS"

// sshOptions returns the client options of an ssh://[user@]host[:port]
// engine: every connection is `ssh HOST docker system dial-stdio` (what the
// docker CLI does), multiplexed over one ssh master connection per host,
// so the remote side needs sshd and the docker CLI, nothing else.
func sshOptions(host string) ([]client.Opt, error) {
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "ssh" || u.Hostname() == "" {
		return nil, fmt.Errorf("engine %q: want ssh://[user@]host[:port]", host)
	}
	if u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("engine %q: ssh:// takes no path", host)
	}
	args := []string{"-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", "ControlPersist=60",
		"-o", "ControlPath=" + os.TempDir() + "/otcurate-ssh-%C"}
	if u.User != nil && u.User.Username() != "" {
		args = append(args, "-l", u.User.Username())
	}
	if p := u.Port(); p != "" {
		args = append(args, "-p", p)
	}
	args = append(args, strings.Fields(os.Getenv(SSHFlagsEnv))...)
	args = append(args, "--", u.Hostname(), "docker", "system", "dial-stdio")
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialCommand(ctx, u.Host, "ssh", args...)
	}
	// The host name is a placeholder: every request goes through dial.
	return []client.Opt{client.WithHost("http://docker.ssh"), client.WithDialContext(dial)}, nil
}

// commandConn is a net.Conn over a command's stdin and stdout.
type commandConn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *sandbox.HeadTail
	addr   string
	once   sync.Once
}

// dialCommand starts name with args; addr names the far end in errors.
func dialCommand(ctx context.Context, addr, name string, args ...string) (net.Conn, error) {
	// Not CommandContext: the connection outlives the dial's context.
	cmd := exec.Command(name, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &commandConn{cmd: cmd, stdin: stdin, stdout: stdout, stderr: sandbox.NewTail(4 << 10), addr: addr}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if ctx.Err() != nil {
		c.Close()
		return nil, ctx.Err()
	}
	return c, nil
}

func (c *commandConn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if err == io.EOF && n == 0 {
		if msg := strings.TrimSpace(c.stderr.String()); msg != "" {
			return 0, fmt.Errorf("ssh %s: connection closed: %s", c.addr, msg)
		}
	}
	return n, err
}

func (c *commandConn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// CloseWrite half-closes (the end of an exec's stdin).
func (c *commandConn) CloseWrite() error { return c.stdin.Close() }

// Close ends the command (killed if it does not exit on end of input).
func (c *commandConn) Close() error {
	c.once.Do(func() {
		c.stdin.Close()
		done := make(chan struct{})
		go func() { c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			c.cmd.Process.Kill()
			<-done
		}
	})
	return nil
}

type sshAddr string

func (a sshAddr) Network() string { return "ssh" }
func (a sshAddr) String() string  { return string(a) }

func (c *commandConn) LocalAddr() net.Addr                { return sshAddr("local") }
func (c *commandConn) RemoteAddr() net.Addr               { return sshAddr(c.addr) }
func (c *commandConn) SetDeadline(t time.Time) error      { return nil }
func (c *commandConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *commandConn) SetWriteDeadline(t time.Time) error { return nil }
