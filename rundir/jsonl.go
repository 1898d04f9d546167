package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// TornTail is a partial last line set aside from a JSON-lines file: the
// bytes a process killed in the middle of an append left after the file's
// last newline.
type TornTail struct {
	File    string // the JSON-lines file
	Bytes   int64  // how many bytes were cut from its end
	SavedAs string // the file they were copied to first
}

// SetAsideTornTail makes a JSON-lines file end on a whole line, so the next
// append starts a fresh one. Bytes after its last newline are copied to
// NAME.torn-TIME (synced), then cut from the file; the result says where
// they went. A tail that is a whole JSON value lacking only its newline is
// completed with one instead (nothing is lost). A file that ends on a
// newline, is empty or does not exist is left alone and the result is nil.
func SetAsideTornTail(name string) (*TornTail, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	start, err := lastLineStart(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if start == st.Size() {
		return nil, nil
	}
	tail := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(tail, start); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if json.Valid(tail) {
		if _, err := f.WriteAt([]byte{'\n'}, st.Size()); err != nil {
			return nil, fmt.Errorf("%s: completing its last line: %w", name, err)
		}
		return nil, f.Sync()
	}
	saved, err := saveAside(name, tail)
	if err != nil {
		return nil, fmt.Errorf("%s: setting its torn last line aside: %w", name, err)
	}
	if err := f.Truncate(start); err != nil {
		return nil, fmt.Errorf("%s: cutting its torn last line (saved in %s): %w", name, saved, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &TornTail{File: name, Bytes: int64(len(tail)), SavedAs: saved}, nil
}

// lastLineStart is the offset just after the last newline of f's first
// size bytes (0 when there is none).
func lastLineStart(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// saveAside writes data to a new NAME.torn-TIME file, synced with its
// directory entry, and returns its name.
func saveAside(name string, data []byte) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405.000000000Z")
	for i := 0; ; i++ {
		aside := name + ".torn-" + stamp
		if i > 0 {
			aside += fmt.Sprintf("-%d", i)
		}
		f, err := os.OpenFile(aside, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, os.ErrExist) && i < 100 {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
			return "", err
		}
		if d, err := os.Open(filepath.Dir(aside)); err == nil {
			_ = d.Sync()
			d.Close()
		}
		return aside, nil
	}
}

// BadLine is a line in the middle of a JSON-lines file that is not JSON:
// corruption (or, in a ledger written before torn tails were set aside,
// an append made onto a torn line).
type BadLine struct {
	File   string
	Line   int   // 1-based
	Offset int64 // of its first byte
	Bytes  int
}

func (b BadLine) String() string {
	return fmt.Sprintf("%s line %d (byte %d, %d bytes) is not a JSON line", b.File, b.Line, b.Offset, b.Bytes)
}

// RepairJSONL prepares a JSON-lines file that is about to be appended to:
// its torn tail is set aside (SetAsideTornTail) and the lines before it
// that are not JSON are reported (at most max of them; they are left in
// place for the reader to skip and a person to inspect).
func RepairJSONL(name string, max int) (*TornTail, []BadLine, error) {
	torn, err := SetAsideTornTail(name)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return torn, nil, nil
	}
	if err != nil {
		return torn, nil, err
	}
	defer f.Close()
	var bad []BadLine
	r := bufio.NewReaderSize(f, 256<<10)
	var off int64
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && len(bytes.TrimSpace(line)) > 0 && !json.Valid(line) && len(bad) < max {
			bad = append(bad, BadLine{File: name, Line: n, Offset: off, Bytes: len(line)})
		}
		off += int64(len(line))
		if errors.Is(err, io.EOF) {
			return torn, bad, nil
		}
		if err != nil {
			return torn, bad, fmt.Errorf("%s: %w", name, err)
		}
	}
}
