package fake

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// reaper is the sandbox's PID 1, run inside its root: it mounts /proc
// (only a process of the new PID namespace can), reports ready on fd 3,
// runs the main command ("$@"), reaps orphans (bash reaps every child) and
// exits with the main command.
const reaper = `mount -t proc -o nosuid,nodev,noexec proc /proc || exit 125
echo ready >&3; exec 3>&-
"$@" </dev/null & c=$!
while :; do wait "$c"; s=$?; kill -0 "$c" 2>/dev/null || exit "$s"; done`

// launch prepares the sandbox's namespaces and root on an OS thread of
// its own and starts cmd (the reaper, chrooted into the root, in a new PID
// namespace) from that thread. The thread stays locked to a goroutine
// that waits for the init: its namespaces are not the process's, so it
// must never run other goroutines, and the init's Pdeathsig belongs to the
// thread that forked it. When the init has died the goroutine ends and the
// runtime ends its locked thread, which sends Pdeathsig to every child
// that thread ever forked: no other process this package starts sets it. The mounts live in the new mount namespace only:
// they vanish with the init, whatever happens to this process.
func (b *Backend) launch(c *container, spec containerSpec, cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		c.launcher = unix.Gettid()
		if err := b.setupRoot(c, spec); err != nil {
			started <- err
			return
		}
		root := filepath.Join(c.dir, "root")
		cmd.SysProcAttr.Chroot = root
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.wait()
	}()
	return <-started
}

// setupRoot runs on the locked thread: new mount, UTS, IPC (and network)
// namespaces for it, a private tmpfs on the state directory, and there
// the sandbox's root: an overlay of the image layers and the masked host
// root below a writable upper, with /dev, /sys, /tmp, /logs and the usual
// directories.
func (b *Backend) setupRoot(c *container, spec containerSpec) error {
	flags := unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC
	if !spec.network {
		flags |= unix.CLONE_NEWNET
	}
	if err := unix.Unshare(flags); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("otcurate-fake", c.dir, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("mount the state tmpfs: %w", err)
	}
	mask := filepath.Join(c.dir, "mask")
	if err := writeMask(mask, b.maskNames); err != nil {
		return err
	}
	upper, work := spec.upper, spec.work
	dirs := []string{filepath.Join(c.dir, "base"), filepath.Join(c.dir, "root")}
	if upper == "" {
		upper, work = filepath.Join(c.dir, "upper"), filepath.Join(c.dir, "work")
		dirs = append(dirs, upper, work)
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	root := filepath.Join(c.dir, "root")
	layers := strings.Join(spec.layers, ":")
	if layers != "" {
		layers += ":"
	}
	// With the layers or the upper on the host root's filesystem, overlayfs
	// refuses "/" beside them as a lower layer ("overlapping"): the masked
	// host root is then first made a read-only overlay of its own.
	opts := "lowerdir=" + layers + mask + ":/,upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("otcurate-fake", root, "overlay", 0, opts); err != nil {
		base := filepath.Join(c.dir, "base")
		if err := unix.Mount("otcurate-fake-base", base, "overlay", unix.MS_RDONLY, "lowerdir="+mask+":/"); err != nil {
			return fmt.Errorf("mount the host root overlay: %w", err)
		}
		opts = "lowerdir=" + layers + base + ",upperdir=" + upper + ",workdir=" + work
		if err := unix.Mount("otcurate-fake", root, "overlay", 0, opts); err != nil {
			return fmt.Errorf("mount the sandbox root: %w", err)
		}
	}
	if err := standardDirs(root); err != nil {
		return err
	}
	if err := unix.Mount("/dev", filepath.Join(root, "dev"), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind /dev: %w", err)
	}
	_ = unix.Mount("shm", filepath.Join(root, "dev/shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
	sys := filepath.Join(root, "sys")
	if spec.network || unix.Mount("sysfs", sys, "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "") != nil {
		if err := unix.Mount("/sys", sys, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind /sys: %w", err)
		}
	}
	if err := unix.Sethostname([]byte(c.id[:12])); err != nil {
		return fmt.Errorf("set the hostname: %w", err)
	}
	if !spec.network {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bring lo up: %w", err)
		}
	}
	return nil
}

// standardDirs creates what every sandbox has: /tmp and /var/tmp (1777),
// /root (0700), the mount points and usual directories (0755) when the
// image lacks them, and /logs/{agent,verifier,artifacts} with mode 0777
// always. Paths resolve inside the root (openat2), so a symlink the image
// planted (ln -s /etc /logs) cannot lead the writes to the host.
func standardDirs(rootPath string) error {
	root, err := unix.Open(rootPath, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	for _, d := range []struct {
		name   string
		mode   uint32
		always bool // set the mode even when the directory exists
	}{
		{"/tmp", 0o1777, false}, {"/var/tmp", 0o1777, false}, {"/root", 0o700, false},
		{"/home", 0o755, false}, {"/run", 0o755, false}, {"/mnt", 0o755, false}, {"/media", 0o755, false},
		{"/srv", 0o755, false}, {"/dev", 0o755, false}, {"/proc", 0o755, false}, {"/sys", 0o755, false},
		{"/logs/agent", 0o777, true}, {"/logs/verifier", 0o777, true}, {"/logs/artifacts", 0o777, true},
	} {
		fd, err := openIn(root, d.name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err == nil && !d.always {
			unix.Close(fd)
			continue
		}
		if err != nil {
			if err := mkdirAllIn(root, d.name, owner{}); err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
			if fd, err = openIn(root, d.name, unix.O_RDONLY|unix.O_DIRECTORY, 0); err != nil {
				return fmt.Errorf("%s: %w", d.name, err)
			}
		}
		err = unix.Fchmod(fd, d.mode)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
	}
	return nil
}

// writeMask writes the whiteouts (0/0 character devices) named by names
// below dir.
func writeMask(dir string, names []string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := unix.Mknod(p, unix.S_IFCHR, 0); err != nil {
			return fmt.Errorf("whiteout %s: %w", n, err)
		}
	}
	return nil
}

// loopbackUp sets IFF_UP on lo in the thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return err
	}
	return nil
}

// maskNames lists the host entries sandboxes do not see.
func maskNames() ([]string, error) {
	ents, err := os.ReadDir("/")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !systemEntries[e.Name()] {
			names = append(names, e.Name())
		}
	}
	for _, p := range hiddenBelow {
		if _, err := os.Lstat("/" + p); err == nil {
			names = append(names, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return names, nil
}
