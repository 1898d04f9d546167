//go:build unix && !linux

package beneath

import "golang.org/x/sys/unix"

func openat2Beneath(int, string, int) (int, error) { return -1, unix.ENOSYS }

func haveOpenat2(int) bool { return false }
