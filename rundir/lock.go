package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LockFile is the lock of a run directory: a command that writes the run
// directory holds an exclusive flock on it for its whole run, and writes
// who it is in it for the message a second writer gets.
const LockFile = ".lock"

// ErrLocked is what Lock returns (wrapped in a *LockedError) when another
// process holds the run directory.
var ErrLocked = errors.New("run directory in use")

// Holder is the process holding a run directory's lock, as written in the
// lock file.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// String describes the holder for a message.
func (h Holder) String() string {
	if h.PID == 0 {
		return "another process (a reader such as merge, or a writer that has not written its name yet)"
	}
	return fmt.Sprintf("pid %d on %s (`%s`, since %s)", h.PID, h.Host, h.Command, h.Since.UTC().Format(time.RFC3339))
}

// LockedError reports a run directory held by another process.
type LockedError struct {
	Dir    string
	Holder Holder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("run directory %s is in use by %s: wait for it to finish, or use another run directory", e.Dir, e.Holder)
}

// Unwrap makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Unwrap() error { return ErrLocked }

// DirLock is a held run-directory lock. The kernel releases it when the
// process exits, however it exits (flock), so a killed run never leaves a
// run directory locked; the lock file itself stays.
type DirLock struct {
	f      *os.File
	shared bool // a reader's lock: the file is not its to clear
}

// Lock creates dir if needed and takes its exclusive lock without
// waiting: when another process (or another Lock in this one) holds it,
// it fails at once with a *LockedError naming the holder. command is what
// the lock file says this process is running. Commands that only read a
// run directory (report) do not lock it.
func Lock(dir, command string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	name := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run dir lock: %w", err)
	}
	if err := take(f, dir, name, true); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	h := Holder{PID: os.Getpid(), Host: host, Command: command, Since: time.Now().UTC()}
	b, _ := json.Marshal(h)
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("run dir lock %s: %w", name, err)
	}
	if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("run dir lock %s: %w", name, err)
	}
	return &DirLock{f: f}, nil
}

// ReadLock takes a shared lock on dir, for a command that reads a run
// directory as its input (merge, of its shards) and must not read it
// while a build writes it, nor let a build start on it meanwhile. It
// fails at once with a *LockedError when a writer holds the directory;
// readers do not exclude each other. The lock file is created when
// missing; where it cannot be (a read-only directory, which no writer
// can use either) the directory is read unlocked and the result is a
// DirLock that holds nothing.
func ReadLock(dir string) (*DirLock, error) {
	name := filepath.Join(dir, LockFile)
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		if f, err = os.OpenFile(name, os.O_CREATE|os.O_RDONLY, 0o644); err != nil {
			if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
				return nil, fmt.Errorf("run dir %s: not a directory", dir)
			}
			return &DirLock{}, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("run dir lock: %w", err)
	}
	if err := take(f, dir, name, false); err != nil {
		return nil, err
	}
	return &DirLock{f: f, shared: true}, nil
}

// take locks the open lock file f of dir without waiting (exclusive or
// shared). On failure f is closed; a lock another process holds is a
// *LockedError naming the holder.
func take(f *os.File, dir, name string, exclusive bool) error {
	ok, err := tryLock(f, exclusive)
	if err != nil {
		f.Close()
		return fmt.Errorf("run dir lock %s: %w", name, err)
	}
	if !ok {
		h := readHolder(f)
		f.Close()
		return &LockedError{Dir: dir, Holder: h}
	}
	return nil
}

// readHolder reads the holder a lock file names (zero when it cannot).
func readHolder(f *os.File) Holder {
	var h Holder
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err == nil {
		_ = json.Unmarshal([]byte(strings.TrimSpace(string(b))), &h)
	}
	return h
}

// Unlock releases the lock. The lock file is left in place (removing it
// would let a process that opened it before the removal lock a file no
// one else sees); its holder line is cleared.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	if !l.shared {
		_ = l.f.Truncate(0)
	}
	err := errors.Join(unlock(l.f), l.f.Close())
	l.f = nil
	return err
}
