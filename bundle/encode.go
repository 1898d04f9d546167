package bundle

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Entry is one member to pack. For KindFile, exactly one of Data or Open
// supplies the content; Size must match when Open is used.
type Entry struct {
	Name     string // relative, slash separated, no trailing slash
	Kind     Kind
	Mode     fs.FileMode // permission bits
	Data     []byte
	Open     func() (io.ReadCloser, error)
	Size     int64
	Linkname string // symlink target
}

// packEpoch is the fixed modification time of every packed member, so the
// same task always packs to the same bytes.
var packEpoch = time.Unix(0, 0).UTC()

// gzipWriters recycles compressors: a best-compression writer allocates
// over a megabyte of state, far more than a typical task.
var gzipWriters sync.Pool

// Encode writes entries as a deterministic gzip-compressed tar: members
// sorted by name, explicit directory entries (parents are added when
// missing), modes kept, owners and times fixed, best compression. It is the
// layout of the reference packer: names relative to the task directory.
func Encode(w io.Writer, entries []Entry) error {
	all := withParents(entries)
	gz, err := packGzip(w)
	if err != nil {
		return err
	}
	defer gzipWriters.Put(gz)
	tw := tar.NewWriter(gz)
	for _, e := range all {
		if err := writeEntry(tw, e); err != nil {
			return fmt.Errorf("packing %s: %w", e.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// packGzip returns a compressor onto w as every packed bundle is
// compressed (best level, fixed header time), from gzipWriters: hand it
// back with gzipWriters.Put once done.
func packGzip(w io.Writer) (*gzip.Writer, error) {
	gz, _ := gzipWriters.Get().(*gzip.Writer)
	if gz == nil {
		var err error
		if gz, err = gzip.NewWriterLevel(w, gzip.BestCompression); err != nil {
			return nil, err
		}
	} else {
		gz.Reset(w)
	}
	gz.ModTime = packEpoch
	return gz, nil
}

func writeEntry(tw *tar.Writer, e Entry) error {
	hdr := &tar.Header{
		Name:    e.Name,
		Mode:    int64(e.Mode & fs.ModePerm),
		ModTime: packEpoch,
		Format:  tar.FormatPAX,
	}
	if len(e.Name) <= 100 && isASCII(e.Name) && isASCII(e.Linkname) && len(e.Linkname) <= 100 {
		hdr.Format = tar.FormatUSTAR
	}
	switch e.Kind {
	case KindDir:
		hdr.Typeflag = tar.TypeDir
		hdr.Name = e.Name + "/"
		if len(hdr.Name) > 100 {
			hdr.Format = tar.FormatPAX
		}
		return tw.WriteHeader(hdr)
	case KindSymlink:
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = e.Linkname
		hdr.Mode = 0o777
		return tw.WriteHeader(hdr)
	case KindFile:
		hdr.Typeflag = tar.TypeReg
		if e.Open == nil {
			hdr.Size = int64(len(e.Data))
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			_, err := tw.Write(e.Data)
			return err
		}
		hdr.Size = e.Size
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		rc, err := e.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		n, err := io.Copy(tw, io.LimitReader(rc, e.Size))
		if err != nil {
			return err
		}
		if n != e.Size {
			return fmt.Errorf("file changed while packing: read %d of %d bytes", n, e.Size)
		}
		return nil
	}
	return fmt.Errorf("cannot pack member kind %s", e.Kind)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// withParents returns the entries sorted by name with a directory entry for
// every parent that lacks one.
func withParents(entries []Entry) []Entry {
	have := make(map[string]bool, len(entries))
	for _, e := range entries {
		have[e.Name] = true
	}
	out := append([]Entry(nil), entries...)
	for _, e := range entries {
		for p := path.Dir(e.Name); p != "." && p != "/"; p = path.Dir(p) {
			if !have[p] {
				have[p] = true
				out = append(out, Entry{Name: p, Kind: KindDir, Mode: 0o755})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DirEntries lists a task directory as entries for Encode. Symlinks are
// kept when they stay inside the tree, resolved through the tree's other
// symlinks as Walk resolves them; anything else that is not a regular
// file or directory is an error naming the file.
func DirEntries(root string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out = append(out, Entry{Name: name, Kind: KindDir, Mode: info.Mode().Perm()})
		case info.Mode().IsRegular():
			full := p
			out = append(out, Entry{Name: name, Kind: KindFile, Mode: info.Mode().Perm(), Size: info.Size(),
				Open: func() (io.ReadCloser, error) { return os.Open(full) }})
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := symlinkInside(name, target); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			out = append(out, Entry{Name: name, Kind: KindSymlink, Linkname: target})
		default:
			return fmt.Errorf("%s: cannot pack %s", p, strings.ToLower(info.Mode().Type().String()))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var links linkSet
	for _, e := range out {
		if e.Kind == KindSymlink {
			links.add(e.Name, e.Linkname)
		}
	}
	if err := links.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	return out, nil
}

// EncodeDir packs a task directory.
func EncodeDir(w io.Writer, root string) error {
	entries, err := DirEntries(root)
	if err != nil {
		return err
	}
	return Encode(w, entries)
}
