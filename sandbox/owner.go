package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ownerID identifies this process as the owner of what it creates.
func ownerID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// ownerAlive reports whether the owner label names a process that may
// still be running: a live pid on this host, or anything on another host
// (which this host cannot check). Objects without an owner are orphans.
func ownerAlive(owner string) bool {
	host, pidStr, ok := strings.Cut(owner, ":")
	if !ok {
		return false
	}
	if me, _ := os.Hostname(); host != me {
		return true
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// OwnerID is the owner label value of what this process creates
// ("<hostname>:<pid>"), for other backends' janitors.
func OwnerID() string { return ownerID() }

// OwnerAlive reports whether an owner label names a process that may still
// be running (see the Docker janitor).
func OwnerAlive(owner string) bool { return ownerAlive(owner) }
