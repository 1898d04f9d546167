package op

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// KillLimit bounds the kill passes of one call.
const KillLimit = 30 * time.Second

// MaxInput caps the entries a reset reads.
const MaxInput = 1 << 30

// Usage is the helper's command line.
const Usage = `usage: otcurate-sandbox-helper NONCE OP [flags]
OP is one of:
  snapshot                      list the live processes as PID:STARTTIME
  kill                          kill every process not in -base
  read -path P -max N [-tail]   kill, then read a regular file (no symlink followed)
  reset -dir D -mode M [-in F]  kill, then remove D and create it afresh, with the
                                entries read from F ("-": stdin; none without -in)
Common flags: -any-pidns (kill even in the initial PID namespace; without it
the helper refuses, so that a run by hand on a host kills nothing), -base LIST (PID:STARTTIME, comma separated: the processes that
survive), -rm DIR (remove the tree DIR first: a previous helper's directory).
The answer is one frame on stdout (see package op); the exit status is 0
whenever the frame was written.`

// Run is the helper's main: it runs one operation and writes its frame to
// stdout. Every operation but snapshot first kills every process outside
// the baseline, so no process of the agent can write into stdout once the
// frame is written, nor change a file while it is read.
func Run(args []string, stdin io.Reader, stdout io.Writer) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, Usage)
		return 2
	}
	nonce, opName := args[0], args[1]
	fs := flag.NewFlagSet(opName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	base := fs.String("base", "", "")
	rm := fs.String("rm", "", "")
	p := fs.String("path", "", "")
	max := fs.Int64("max", 0, "")
	tail := fs.Bool("tail", false, "")
	dir := fs.String("dir", "", "")
	mode := fs.String("mode", "", "")
	in := fs.String("in", "", "")
	anyNS := fs.Bool("any-pidns", false, "")
	reply := func(st Status, payload []byte) int {
		if err := WriteFrame(stdout, nonce, st, payload); err != nil {
			return 2
		}
		return 0
	}
	fail := func(format string, a ...any) int { return reply(Failed, []byte(fmt.Sprintf(format, a...))) }
	if err := fs.Parse(args[2:]); err != nil {
		return fail("%s: %v", opName, err)
	}
	unix.Umask(0)
	baseline, err := ParseBaseline(*base)
	if err != nil {
		return fail("%v", err)
	}
	if opName == "snapshot" {
		procs, err := Snapshot()
		if err != nil {
			return fail("%v", err)
		}
		var b strings.Builder
		for _, p := range procs {
			b.WriteString(p.String() + "\n")
		}
		return reply(OK, []byte(b.String()))
	}
	// Input first: a file next to the helper goes with its directory.
	var entries []Entry
	if opName == "reset" && *in != "" {
		r := stdin
		if *in != "-" {
			f, err := os.Open(*in)
			if err != nil {
				return fail("reset: input: %v", err)
			}
			defer f.Close()
			r = f
		}
		if entries, err = ReadEntries(r, MaxInput); err != nil {
			return fail("reset: input: %v", err)
		}
	}
	if !*anyNS && initialPIDNS() {
		return fail("%s: refusing to kill in the host's initial PID namespace (pass -any-pidns where a sandbox has one)", opName)
	}
	n, err := KillAll(baseline, KillLimit)
	if err != nil {
		return fail("kill: %v (%d signalled)", err, n)
	}
	if *rm != "" {
		if c, err := components(*rm); err != nil || len(c) < 1 {
			return fail("rm %q: not an absolute directory below /", *rm)
		} else if err := removePath(c); err != nil {
			return fail("rm %s: %v", *rm, err)
		}
	}
	switch opName {
	case "kill":
		return reply(OK, []byte(strconv.Itoa(n)))
	case "read":
		data, res := ReadFile(*p, *max, *tail)
		if res.Status != OK {
			return reply(res.Status, []byte(res.Detail))
		}
		return reply(OK, data)
	case "reset":
		m, err := strconv.ParseUint(*mode, 8, 32)
		if err != nil {
			return fail("reset: mode %q: %v", *mode, err)
		}
		res := ResetDir(*dir, uint32(m), entries)
		return reply(res.Status, []byte(res.Detail))
	}
	return fail("unknown operation %q", opName)
}

// initPIDNSIno is the inode of the initial PID namespace (the kernel's
// PROC_PID_INIT_INO).
const initPIDNSIno = 0xEFFFFFFC

// initialPIDNS reports whether the helper runs in the host's initial PID
// namespace, where a kill pass would hit the host's processes: a guard
// against running it by hand outside a sandbox.
func initialPIDNS() bool {
	var st unix.Stat_t
	return unix.Stat("/proc/self/ns/pid", &st) == nil && st.Ino == initPIDNSIno
}

// removePath removes the tree at the path comps, following no link.
func removePath(comps []string) error {
	root, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	dir, res := walk(root, comps[:len(comps)-1])
	if res.Status == NotFound {
		return nil
	}
	if res.Status != OK {
		return fmt.Errorf("%s", res.Detail)
	}
	defer unix.Close(dir)
	return removeAt(dir, comps[len(comps)-1])
}
