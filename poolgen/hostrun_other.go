//go:build !unix

package poolgen

import "os/exec"

func killGroup(cmd *exec.Cmd) {}
