package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
)

// RetainLimits bound which file contents Scan keeps in memory. Files over
// MaxFile are hashed but not retained; once MaxTotal bytes are retained the
// rest are hashed only.
type RetainLimits struct {
	MaxFile  int64
	MaxTotal int64
	// Only, when non-nil, names the members to retain; the others are
	// hashed as they stream by and listed in Truncated.
	Only []string
	// Match, when non-nil, is asked instead of Only which members to
	// retain.
	Match func(name string) bool
}

func (k RetainLimits) wants(name string) bool {
	if k.Match != nil {
		return k.Match(name)
	}
	return k.Only == nil || slices.Contains(k.Only, name)
}

// DefaultRetain keeps the text files the validators and linters read.
func DefaultRetain() RetainLimits { return RetainLimits{MaxFile: 1 << 20, MaxTotal: 4 << 20} }

// File is a member seen by Scan.
type File struct {
	Member
	Digest [32]byte // sha256 of the content (files), of the target (links)
	Data   []byte   // content, when retained
}

// Bundle is the in-memory view of a decoded task bundle: every member's
// metadata, the contents of small files, and content hashes.
type Bundle struct {
	Files       map[string]*File // by clean relative name; directories included
	Names       []string         // sorted member names
	Inflated    int64            // total content bytes of regular files
	Truncated   []string         // files whose content was not retained
	ContentHash string           // see ContentHash
	EnvHash     string           // hash of environment/ only
}

// Data returns the retained content of a regular file and whether it exists
// and was retained.
func (b *Bundle) Data(name string) ([]byte, bool) {
	f, ok := b.Files[name]
	if !ok || f.Kind != KindFile || (f.Data == nil && f.Size > 0) {
		return nil, false
	}
	return f.Data, true
}

// Has reports whether a member of the given kind exists. Hard links count
// as files.
func (b *Bundle) Has(name string, k Kind) bool {
	f, ok := b.Files[name]
	if !ok {
		return false
	}
	if k == KindFile {
		return f.Kind == KindFile || f.Kind == KindHardlink
	}
	return f.Kind == k
}

// HasDir reports whether name is a directory, explicit or implied by a
// member below it.
func (b *Bundle) HasDir(name string) bool {
	if b.Has(name, KindDir) {
		return true
	}
	prefix := name + "/"
	i := sort.SearchStrings(b.Names, prefix)
	return i < len(b.Names) && strings.HasPrefix(b.Names[i], prefix)
}

var hashers = sync.Pool{New: func() any { return sha256.New() }}
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Scan decodes a blob with Walk, hashing every file and retaining small
// contents. Defects are returned as *Defect.
func Scan(blob []byte, lim Limits, keep RetainLimits) (*Bundle, error) {
	return scan(blob, lim, keep, true)
}

// scan is Scan; whole=false forces the streaming inflater (for tests that
// hold the two inflaters to the same results).
func scan(blob []byte, lim Limits, keep RetainLimits, whole bool) (*Bundle, error) {
	if len(blob) == 0 {
		return nil, defectf(ReasonEmptyBlob, "task_binary is empty")
	}
	b := &Bundle{}
	// Members are collected in one slice and indexed once the walk is
	// done, with the map sized exactly: a File and a map growth per
	// member were a large share of Scan's allocations.
	files := make([]File, 0, 16)
	var retained int64
	h := hashers.Get().(hash.Hash)
	defer hashers.Put(h)
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	wholeBlob := blob
	if !whole {
		wholeBlob = nil
	}
	err := walk(bytes.NewReader(blob), wholeBlob, lim, func(m Member, content io.Reader) error {
		files = append(files, File{Member: m})
		f := &files[len(files)-1]
		switch m.Kind {
		case KindFile:
			h.Reset()
			if m.Size <= keep.MaxFile && retained+m.Size <= keep.MaxTotal && keep.wants(m.Name) {
				data := make([]byte, m.Size)
				if _, err := io.ReadFull(content, data); err != nil {
					return err
				}
				h.Write(data)
				f.Data = data
				retained += m.Size
				b.Inflated += m.Size
			} else {
				n, err := io.CopyBuffer(h, content, *bufp)
				if err != nil {
					return err
				}
				b.Inflated += n
				b.Truncated = append(b.Truncated, m.Name)
			}
			h.Sum(f.Digest[:0])
		case KindSymlink:
			f.Digest = sha256.Sum256([]byte(m.Linkname))
		case KindHardlink:
			// Walk accepts a hard link only to an earlier regular file.
			for i := range files[:len(files)-1] {
				if src := &files[i]; src.Name == m.Linkname {
					f.Digest, f.Data, f.Size, f.Mode = src.Digest, src.Data, src.Size, src.Mode
					break
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	b.Files = make(map[string]*File, len(files))
	b.Names = make([]string, 0, len(files))
	for i := range files {
		name := files[i].Name
		if _, repeated := b.Files[name]; !repeated { // a directory may be listed twice
			b.Names = append(b.Names, name)
		}
		b.Files[name] = &files[i]
	}
	sort.Strings(b.Names)
	b.ContentHash = b.hashUnder("")
	b.EnvHash = b.hashUnder("environment/")
	return b, nil
}

// hashUnder computes the content hash of the members below prefix (all when
// prefix is empty), with names relative to prefix.
//
// The hash covers, for each member in name order: its kind, whether it is
// executable (the only mode bit the runtime contract cares about), its
// relative name and the sha256 of its content or link target. Directories
// count only when empty, so packers that omit directory entries, reorder
// members or stamp other times and owners all give the same hash.
func (b *Bundle) hashUnder(prefix string) string {
	h := sha256.New()
	line := make([]byte, 0, 256)
	for _, name := range b.Names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		f := b.Files[name]
		rel := strings.TrimPrefix(name, prefix)
		switch f.Kind {
		case KindDir:
			if j := sort.SearchStrings(b.Names, name+"/"); j < len(b.Names) && strings.HasPrefix(b.Names[j], name+"/") {
				continue // non-empty: implied by its children
			}
			line = append(line[:0], "d - "...)
		case KindFile, KindHardlink:
			line = append(append(line[:0], 'f', ' '), execFlag(f.Mode)...)
			line = append(line, ' ')
			line = hex.AppendEncode(line, f.Digest[:])
			line = append(line, ' ')
		case KindSymlink:
			line = append(line[:0], "l - "...)
			line = hex.AppendEncode(line, f.Digest[:])
			line = append(line, ' ')
		}
		line = append(append(line, rel...), 0)
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func execFlag(m fs.FileMode) string {
	if m&0o111 != 0 {
		return "x"
	}
	return "-"
}

// Entries returns the members under dir ("environment", "tests"...) as
// entries named relative to it, for building or uploading. Every file must
// have been retained (scan with RetainAll); otherwise it is an error.
func (b *Bundle) Entries(dir string) ([]Entry, error) {
	prefix := dir + "/"
	var out []Entry
	for _, name := range b.Names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		f := b.Files[name]
		e := Entry{Name: strings.TrimPrefix(name, prefix), Mode: f.Mode}
		switch f.Kind {
		case KindDir:
			e.Kind = KindDir
		case KindFile, KindHardlink:
			if f.Data == nil && f.Size > 0 {
				return nil, fmt.Errorf("%s was not retained in memory (scan with RetainAll)", name)
			}
			e.Kind, e.Data = KindFile, f.Data
			if e.Data == nil {
				e.Data = []byte{}
			}
		case KindSymlink:
			e.Kind, e.Linkname = KindSymlink, f.Linkname
		}
		out = append(out, e)
	}
	return out, nil
}

// RetainAll keeps every file's content, up to the decoder limits: for
// tasks about to run in a sandbox.
func RetainAll(lim Limits) RetainLimits {
	if lim == (Limits{}) {
		lim = DefaultLimits()
	}
	return RetainLimits{MaxFile: lim.MaxFileBytes, MaxTotal: lim.MaxTotalBytes}
}
