package beneath

import "golang.org/x/sys/unix"

// resolveFlags confine a lookup below its directory and refuse every
// symlink on the way, the last component included.
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func openat2Beneath(dirfd int, name string, flags int) (int, error) {
	return unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags), Resolve: resolveFlags})
}

// haveOpenat2 reports whether openat2 works here: it does not before
// Linux 5.6, and seccomp filters (older container runtimes) refuse it.
func haveOpenat2(dirfd int) bool {
	fd, err := openat2Beneath(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}
