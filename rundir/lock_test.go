//go:build unix

package rundir

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLockExcludesASecondWriter: a second Lock on a held run directory
// fails at once naming the holder, CheckNotWriting sees the holder, and
// after Unlock both succeed.
func TestLockExcludesASecondWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	l, err := Lock(dir, "otcurate build --pool p")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Lock(dir, "otcurate filter")
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock: %v, want a LockedError", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("second Lock took %s: it must not wait", time.Since(start))
	}
	for _, want := range []string{dir, "otcurate build --pool p", "pid " + strconv.Itoa(os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if _, err := ReadLock(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("ReadLock on a held dir: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	r1, err := ReadLock(dir)
	if err != nil {
		t.Fatalf("ReadLock after Unlock: %v", err)
	}
	r2, err := ReadLock(dir)
	if err != nil {
		t.Fatalf("a second reader: %v", err)
	}
	if _, err := Lock(dir, "otcurate build"); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "a reader such as merge") {
		t.Errorf("Lock while readers hold the dir: %v", err)
	}
	r1.Unlock()
	r2.Unlock()
	l2, err := Lock(dir, "otcurate filter")
	if err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	l2.Unlock()
}

// TestReadLockOfAReadOnlyDir: a directory where the lock file cannot be
// created is read unlocked; a missing directory is an error.
func TestReadLockOfAReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only directories")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o555)
	defer os.Chmod(dir, 0o755)
	l, err := ReadLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if _, err := ReadLock(filepath.Join(dir, "absent")); err == nil {
		t.Error("ReadLock of a missing directory succeeded")
	}
}

// TestLockHeldByAnotherProcess: a real second process holds the lock; this
// one is refused with the holder's pid, and once the holder is killed
// (SIGKILL, no cleanup) the lock is free.
func TestLockHeldByAnotherProcess(t *testing.T) {
	if dir := os.Getenv("OTCURATE_TEST_LOCK_HOLDER"); dir != "" {
		if _, err := Lock(dir, "holder"); err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHeldByAnotherProcess$")
	cmd.Env = append(os.Environ(), "OTCURATE_TEST_LOCK_HOLDER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("holder: %q", line)
	}
	_, err = Lock(dir, "second")
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid || le.Holder.Command != "holder" {
		t.Fatalf("Lock while another process holds it: %v (holder %+v, want pid %d)", err, le, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Lock(dir, "second")
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	l.Unlock()
}
