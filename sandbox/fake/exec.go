package fake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/otcurate/otcurate/sandbox"
)

const (
	// streamGrace is how long output may keep flowing after a timed-out
	// command was killed (something the kill missed may hold it open).
	streamGrace = 2 * time.Second
	// killPasses bounds the scans of a kill (a process may fork between
	// the scan and the kill).
	killPasses = 4
)

// proc describes one process to run inside a container.
type proc struct {
	argv    []string
	user    string // "" = the image's user
	workdir string // "" = the container's workdir
	env     []string
	marker  string // value of sandbox.ExecMarkerVar, tags every process of it
}

// imageConfig is what an image records for its containers (Docker's image
// config, as far as the fake honours it).
type imageConfig struct {
	Env        []string `json:"env,omitempty"`
	Workdir    string   `json:"workdir,omitempty"`
	User       string   `json:"user,omitempty"`
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
	Shell      []string `json:"shell,omitempty"`
}

// command prepares p: nsenter joins the container's namespaces and root,
// setpriv switches to the user, env -C enters the workdir. It returns a
// failure to resolve the user or workdir as a message with exit code 126,
// as the Docker engine reports an exec that cannot start.
func (c *container) command(p proc) (*exec.Cmd, string, error) {
	if err := c.checkAlive(); err != nil {
		return nil, "", err
	}
	u, err := lookupUser(c, p.user)
	if err != nil {
		if errors.Is(err, errNoUser) {
			return nil, err.Error(), nil
		}
		return nil, "", err
	}
	wd := p.workdir
	if wd == "" {
		wd = "/"
	}
	if !path.IsAbs(wd) {
		return nil, fmt.Sprintf("OCI runtime exec failed: Cwd must be an absolute path: %q", wd), nil
	}
	if st, err := statIn(c, wd); err != nil || !st.IsDir() {
		return nil, fmt.Sprintf("OCI runtime exec failed: exec failed: unable to start container process: chdir to cwd (%q) set in config.json failed: no such file or directory", wd), nil
	}
	argv := []string{"nsenter", "-t", strconv.Itoa(c.pid), "-m", "-u", "-i", "-n", "-p", "-r", "--"}
	if u.uid != 0 || u.gid != 0 || len(u.groups) > 0 {
		argv = append(argv, "setpriv", "--reuid", strconv.Itoa(u.uid), "--regid", strconv.Itoa(u.gid))
		if len(u.groups) == 0 {
			argv = append(argv, "--clear-groups")
		} else {
			gs := make([]string, len(u.groups))
			for i, g := range u.groups {
				gs[i] = strconv.Itoa(g)
			}
			argv = append(argv, "--groups", strings.Join(gs, ","))
		}
	}
	argv = append(argv, "env", "-C", wd, "--")
	argv = append(argv, p.argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	env := withDefault(p.env, "PATH", defaultPath)
	env = withDefault(env, "HOSTNAME", c.id[:12])
	env = withDefault(env, "HOME", u.home)
	if p.marker != "" {
		env = append(env, sandbox.ExecMarkerVar+"="+p.marker)
	}
	cmd.Env = env
	return cmd, "", nil
}

// withDefault appends key=value unless env sets key.
func withDefault(env []string, key, value string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return env
		}
	}
	return append(env, key+"="+value)
}

// mergeEnv lays the maps over the list (later wins), keeping the order of
// first appearance.
func mergeEnv(base []string, maps ...map[string]string) []string {
	out := slices.Clone(base)
	for _, m := range maps {
		for _, kv := range sandbox.EnvList(m) {
			k, _, _ := strings.Cut(kv, "=")
			out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, k+"=") })
			out = append(out, kv)
		}
	}
	return out
}

// run runs p to completion with its output drained into stdout and
// stderr. When timeout passes, every process of p is killed and timedOut
// is set; when ctx ends, they are killed and ctx's error returned.
func (c *container) run(ctx context.Context, p proc, stdout, stderr io.Writer, timeout time.Duration) (code int, timedOut bool, err error) {
	if p.marker == "" {
		p.marker = sandbox.NewExecMarker()
	}
	cmd, startErr, err := c.command(p)
	if err != nil {
		return 0, false, err
	}
	if cmd == nil {
		_, _ = io.WriteString(stderr, startErr+"\n")
		return 126, false, nil
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return 0, false, infra("exec", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return 0, false, infra("exec", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	// No Pdeathsig: it fires when the forking OS thread exits, and the
	// threads launch locks do exit (with whatever they forked before).
	// If this process dies, the init's Pdeathsig ends the sandbox, and
	// nsenter with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return 0, false, infra("exec", err)
	}
	c.addWrapper(cmd.Process)
	copied := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(stdout, outR); copied <- struct{}{} }()
	go func() { _, _ = io.Copy(stderr, errR); copied <- struct{}{} }()
	drained := make(chan struct{})
	go func() { <-copied; <-copied; close(drained) }()

	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var ctxErr error
	select {
	case <-drained:
	case <-expired:
		timedOut = true
	case <-ctx.Done():
		ctxErr = ctx.Err()
	case <-c.exited:
	}
	if timedOut || ctxErr != nil || !c.alive() {
		killMarked(p.marker)
		select {
		case <-drained:
		case <-time.After(streamGrace):
		}
	}
	outR.Close() // unblocks the copies if something still holds the pipes
	errR.Close()
	<-drained
	_ = cmd.Wait()
	c.dropWrapper(cmd.Process)
	if ctxErr != nil {
		return 0, false, fmt.Errorf("exec: %w", ctxErr)
	}
	if !timedOut && !c.alive() {
		return 0, false, infra("exec", fmt.Errorf("sandbox %s stopped", c.id[:12]))
	}
	return exitCode(cmd.ProcessState), timedOut, nil
}

// killMarked kills every process whose environment holds
// sandbox.ExecMarkerVar=marker, and all their descendants.
func killMarked(marker string) {
	want := []byte(sandbox.ExecMarkerVar + "=" + marker)
	for range killPasses {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		kids := map[int][]int{}
		var roots []int
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if ppid, ok := parentPID(pid); ok {
				kids[ppid] = append(kids[ppid], pid)
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err == nil && slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return bytes.Equal(kv, want) }) {
				roots = append(roots, pid)
			}
		}
		if len(roots) == 0 {
			return
		}
		for queue := roots; len(queue) > 0; {
			pid := queue[0]
			queue = append(queue[1:], kids[pid]...)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// parentPID is field 4 of /proc/PID/stat.
func parentPID(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
