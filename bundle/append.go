package bundle

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// Append returns blob, a gzip-compressed tar, with entries added after its
// last member: the archive's own members keep their tar bytes (headers,
// modes, times, order), only the compression is redone (best level, fixed
// header time, as Encode). Parent directories missing from both the
// archive and entries are added. An entry whose name, or a parent it
// needs, is already a member is refused: a task's tree is never
// overwritten. The inflated archive must fit lim.MaxTotalBytes.
func Append(blob []byte, lim Limits, entries []Entry) ([]byte, error) {
	if lim == (Limits{}) {
		lim = DefaultLimits()
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return nil, fmt.Errorf("append: not gzip: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, lim.MaxTotalBytes+1))
	if err != nil {
		return nil, fmt.Errorf("append: inflating: %w", err)
	}
	if int64(len(raw)) > lim.MaxTotalBytes {
		return nil, fmt.Errorf("append: %w", errLimit)
	}
	end, members, err := tarEnd(raw)
	if err != nil {
		return nil, err
	}
	var add []Entry
	for _, e := range withParents(entries) {
		switch k, ok := members[e.Name]; {
		case !ok:
			add = append(add, e)
		case k != KindDir || e.Kind != KindDir || !isParentOf(e.Name, entries):
			return nil, fmt.Errorf("append: %s is already in the archive", e.Name)
		}
	}
	var out bytes.Buffer
	gz, err := packGzip(&out)
	if err != nil {
		return nil, err
	}
	defer gzipWriters.Put(gz)
	if _, err := gz.Write(raw[:end]); err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, e := range add {
		if err := writeEntry(tw, e); err != nil {
			return nil, fmt.Errorf("append: packing %s: %w", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// isParentOf reports whether dir is a parent directory of an entry (and
// so may already exist in the archive), not an entry in its own right.
func isParentOf(dir string, entries []Entry) bool {
	for _, e := range entries {
		if e.Name == dir {
			return false
		}
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name, dir+"/") {
			return true
		}
	}
	return false
}

// tarEnd finds where the members of a raw tar end (the offset of its
// end-of-archive blocks) and the kind of every member by clean name.
func tarEnd(raw []byte) (int64, map[string]Kind, error) {
	cr := &countReader{r: bytes.NewReader(raw)}
	tr := tar.NewReader(cr)
	members := map[string]Kind{}
	var end int64
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return end, members, nil
		}
		if err != nil {
			return 0, nil, fmt.Errorf("append: reading the archive: %w", err)
		}
		if hdr.Typeflag == tar.TypeGNUSparse {
			return 0, nil, fmt.Errorf("append: %s is a sparse file", hdr.Name)
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return 0, nil, fmt.Errorf("append: reading %s: %w", hdr.Name, err)
		}
		end = (cr.n + 511) &^ 511 // the content's padding to a whole block
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		switch hdr.Typeflag {
		case tar.TypeDir:
			members[name] = KindDir
		case tar.TypeSymlink:
			members[name] = KindSymlink
		default:
			members[name] = KindFile
		}
		for p := path.Dir(name); p != "." && p != "/"; p = path.Dir(p) {
			if _, ok := members[p]; !ok {
				members[p] = KindDir // implied by the member's name
			}
		}
	}
}

// countReader counts the bytes read through it (and hides the reader's
// Seek, so the tar reader reads every byte it skips).
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
