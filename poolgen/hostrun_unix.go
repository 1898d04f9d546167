//go:build unix

package poolgen

import (
	"os/exec"
	"syscall"
)

// killGroup makes cmd run in its own process group and be killed with all
// its children when its context ends (a hanging verifier leaves sleepers).
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
