package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// Limits bound what the decoder accepts. They are enforced while inflating,
// so an archive that exceeds them costs at most the limit in CPU time and
// nothing in memory or disk.
type Limits struct {
	MaxTotalBytes int64 // inflated bytes of the whole tar stream
	MaxMembers    int   // tar members, directories included
	MaxFileBytes  int64 // size of one regular file
}

// DefaultLimits are generous for real task bundles (the reference pool
// averages 14 KB compressed, about 20 members) and still stop a bomb early.
func DefaultLimits() Limits {
	return Limits{MaxTotalBytes: 512 << 20, MaxMembers: 20000, MaxFileBytes: 256 << 20}
}

// Kind is the type of a tar member that the decoder accepts.
type Kind uint8

// Member kinds.
const (
	KindDir Kind = iota
	KindFile
	KindSymlink
	KindHardlink
)

func (k Kind) String() string {
	switch k {
	case KindDir:
		return "dir"
	case KindFile:
		return "file"
	case KindSymlink:
		return "symlink"
	case KindHardlink:
		return "hardlink"
	}
	return "unknown"
}

// Member is one accepted archive member. Name is clean, relative, slash
// separated and never contains "..".
type Member struct {
	Name     string
	Kind     Kind
	Mode     fs.FileMode // permission bits only
	Size     int64       // regular files only
	Linkname string      // symlink target as stored, or clean hard-link target
}

var gzipReaders, tarReaders sync.Pool

// Tar type flags (after normalisation by tarReader).
const (
	typeReg     = '0'
	typeLink    = '1'
	typeSymlink = '2'
	typeChar    = '3'
	typeBlock   = '4'
	typeDir     = '5'
	typeFifo    = '6'
)

// errLimit marks the inflated stream exceeding MaxTotalBytes.
var errLimit = errors.New("inflated size limit exceeded")

// inflateCounter sits between gzip and tar: it counts inflated bytes,
// enforces the total limit and remembers the first decompression error so
// tar-level errors can be attributed to the right layer.
type inflateCounter struct {
	r   io.Reader
	n   int64
	max int64
	err error
}

func (c *inflateCounter) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if room := c.max - c.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.max {
		c.err = errLimit
		return n, errLimit
	}
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// walker holds the state of one Walk. Walkers are reused (see walkers):
// a fresh one per bundle cost a handful of allocations, maps included, on
// every task of a pool.
type walker struct {
	lim     Limits
	counter inflateCounter
	content contentReader // the current file's reader, handed to fn
	members int
	seen    map[string]Kind // every member and implied parent directory
	links   linkSet         // the symlinks seen; empty (no maps) until the first
	raw     bytes.Reader    // the inflated blob, when inflated whole
}

var walkers sync.Pool

// release clears the walker's state and returns it to walkers. Maps that
// grew large (a bundle with thousands of members) are dropped rather than
// kept at that size.
func (w *walker) release() {
	if len(w.seen) > 1024 {
		w.seen = make(map[string]Kind)
	} else {
		clear(w.seen)
	}
	w.links = linkSet{}
	w.counter, w.content = inflateCounter{}, contentReader{}
	w.raw.Reset(nil)
	walkers.Put(w)
}

// Walk decodes a gzip-compressed tar stream and calls fn for each accepted
// member, in archive order. For regular files, content yields the file bytes
// (reading it is optional); it is valid only until fn returns (the reader
// is reused for the next file). Any violation stops the walk with a *Defect; an
// error returned by fn stops it too and is returned as is.
func Walk(r io.Reader, lim Limits, fn func(m Member, content io.Reader) error) error {
	return walk(r, nil, lim, fn)
}

// walk is Walk; blob, when not nil, is the whole of r's content, which
// lets a valid single-member blob be inflated in one call (inflateWhole)
// rather than streamed.
func walk(r io.Reader, blob []byte, lim Limits, fn func(m Member, content io.Reader) error) error {
	if lim == (Limits{}) {
		lim = DefaultLimits()
	}
	if err := checkMagic(&r); err != nil {
		return err
	}
	w, _ := walkers.Get().(*walker)
	if w == nil {
		w = &walker{seen: make(map[string]Kind)}
	}
	defer w.release()
	var src io.Reader
	if raw, buf, ok := inflateWhole(blob, lim.MaxTotalBytes); ok {
		defer inflateBufs.Put(buf)
		w.raw.Reset(raw)
		src = &w.raw
	} else {
		gz, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if gz == nil {
			gz, err = gzip.NewReader(r)
		} else {
			err = gz.Reset(r)
		}
		if err != nil {
			return classifyGzipOpen(err)
		}
		defer gzipReaders.Put(gz)
		src = gz
	}
	w.lim, w.members = lim, 0
	w.counter = inflateCounter{r: src, max: lim.MaxTotalBytes}
	w.content = contentReader{w: w}
	tr, _ := tarReaders.Get().(*tarReader)
	if tr == nil {
		tr = newTarReader(&w.counter)
	} else {
		tr.reset(&w.counter)
	}
	defer tarReaders.Put(tr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return w.classify(err, "reading tar header")
		}
		w.members++
		if w.members > lim.MaxMembers {
			return defectf(ReasonTooManyMembers, "more than %d members", lim.MaxMembers)
		}
		m, skip, err := w.accept(hdr)
		if err != nil {
			return err
		}
		if skip {
			continue
		}
		var content io.Reader = eofReader{}
		if m.Kind == KindFile {
			w.content.r, w.content.name = tr, m.Name
			content = &w.content
		}
		if err := fn(m, content); err != nil {
			return err
		}
	}
	// Links are resolved once all are known: a link added later can
	// redirect one accepted earlier (s -> . turns s/s/../.. into a way out).
	if err := w.links.check(); err != nil {
		return err
	}
	// Drain what follows the tar end marker (record padding, further gzip
	// members) so a truncated or corrupt tail is still detected.
	if _, err := io.Copy(io.Discard, &w.counter); err != nil {
		return w.classify(err, "reading archive tail")
	}
	return nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

type contentReader struct {
	r    io.Reader
	w    *walker
	name string
}

func (c *contentReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		return n, c.w.classify(err, "reading "+c.name)
	}
	return n, err
}

// classify attributes a read error to the gzip layer, the size limit or the
// tar layer.
func (w *walker) classify(err error, what string) error {
	if _, ok := AsDefect(err); ok {
		return err
	}
	if w.counter.err != nil {
		err = w.counter.err
	}
	switch {
	case errors.Is(err, errLimit):
		return defectf(ReasonUncompressedTooBig, "inflated size exceeds %d bytes (gzip bomb?)", w.lim.MaxTotalBytes)
	case w.counter.err != nil:
		return classifyGzipRead(err, what)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Defect{Reason: ReasonTruncatedTar, Detail: what + ": tar stream ends mid-member", Err: err}
	case errors.Is(err, errTarHeader) && w.members == 0:
		return &Defect{Reason: ReasonNotTar, Detail: "gzip content is not a tar archive", Err: err}
	default:
		return &Defect{Reason: ReasonNotTar, Detail: fmt.Sprintf("%s: invalid tar data after %d members: %v", what, w.members, err), Err: err}
	}
}

// classifyGzipOpen names a failure to read the gzip header of a blob that
// checkMagic has passed (so it starts with the magic).
func classifyGzipOpen(err error) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Defect{Reason: ReasonTruncatedGzip, Detail: "gzip header is truncated", Err: err}
	case errors.Is(err, gzip.ErrHeader):
		return &Defect{Reason: ReasonCorruptGzip, Detail: "invalid gzip header (method, flags or header CRC)", Err: err}
	default:
		return &Defect{Reason: ReasonNotGzip, Detail: err.Error(), Err: err}
	}
}

func classifyGzipRead(err error, what string) error {
	var corrupt flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Defect{Reason: ReasonTruncatedGzip, Detail: what + ": gzip stream ends early", Err: err}
	case errors.Is(err, gzip.ErrChecksum):
		return &Defect{Reason: ReasonCorruptGzip, Detail: what + ": gzip checksum mismatch", Err: err}
	case errors.As(err, &corrupt):
		return &Defect{Reason: ReasonCorruptGzip, Detail: what + ": " + err.Error(), Err: err}
	case errors.Is(err, gzip.ErrHeader):
		return &Defect{Reason: ReasonCorruptGzip, Detail: what + ": garbage after the gzip stream", Err: err}
	default:
		return &Defect{Reason: ReasonCorruptGzip, Detail: what + ": " + err.Error(), Err: err}
	}
}

// checkMagic rejects input that does not start with the gzip magic, so a
// short non-gzip blob is "not gzip" rather than "truncated gzip". It may
// replace *r with a buffered reader.
func checkMagic(r *io.Reader) error {
	var head []byte
	switch src := (*r).(type) {
	case *bytes.Reader:
		var b [2]byte
		n, _ := src.ReadAt(b[:], 0)
		head = b[:n]
	default:
		br := bufioReader(src)
		head, _ = br.Peek(2)
		*r = br
	}
	switch {
	case len(head) == 0:
		return defectf(ReasonEmptyBlob, "empty blob")
	case len(head) < 2 || head[0] != 0x1f || head[1] != 0x8b:
		detail := "blob is not gzip-compressed (bad magic)"
		if b, ok := (*r).(*bytes.Reader); ok && looksLikeTar(b) {
			detail = "blob is an uncompressed tar; the dataset format requires gzip"
		}
		return &Defect{Reason: ReasonNotGzip, Detail: detail, Err: gzip.ErrHeader}
	}
	return nil
}

func looksLikeTar(b *bytes.Reader) bool {
	var hdr [262]byte
	n, _ := b.ReadAt(hdr[:], 0)
	return n >= 262 && string(hdr[257:262]) == "ustar"
}

// accept validates one header. skip is true for members that carry no
// content of their own (the root directory entry).
func (w *walker) accept(hdr *tarHeader) (m Member, skip bool, err error) {
	name, err := cleanName(hdr.Name)
	if err != nil {
		return m, false, err
	}
	if name == "" {
		if hdr.Typeflag == typeDir {
			return m, true, nil // "./" root entry
		}
		return m, false, defectf(ReasonUnsafeMemberPath, "member %q names the archive root", hdr.Name)
	}
	m = Member{Name: name, Mode: fs.FileMode(hdr.Mode) & fs.ModePerm}
	switch hdr.Typeflag {
	case typeDir:
		m.Kind = KindDir
	case typeReg:
		m.Kind = KindFile
		m.Size = hdr.Size
		if hdr.Size > w.lim.MaxFileBytes {
			return m, false, defectf(ReasonFileTooLarge, "%s is %d bytes (limit %d)", name, hdr.Size, w.lim.MaxFileBytes)
		}
	case typeSymlink:
		m.Kind = KindSymlink
		m.Linkname = hdr.Linkname
		if err := symlinkInside(name, hdr.Linkname); err != nil {
			return m, false, err
		}
	case typeLink:
		m.Kind = KindHardlink
		target, err := cleanName(hdr.Linkname)
		if err != nil || target == "" {
			return m, false, defectf(ReasonLinkEscapesTree, "hard link %s points outside the tree (%q)", name, hdr.Linkname)
		}
		if k, ok := w.seen[target]; !ok || (k != KindFile && k != KindHardlink) {
			return m, false, defectf(ReasonUnsupportedMember, "hard link %s points to %q, which is not an earlier regular file", name, hdr.Linkname)
		}
		m.Linkname = target
	case typeChar, typeBlock:
		return m, false, defectf(ReasonSpecialFile, "%s is a device file", name)
	case typeFifo:
		return m, false, defectf(ReasonSpecialFile, "%s is a FIFO", name)
	default:
		return m, false, defectf(ReasonUnsupportedMember, "%s has unsupported tar type %q", name, hdr.Typeflag)
	}
	if err := w.record(m); err != nil {
		return m, false, err
	}
	return m, false, nil
}

// record registers a member name and its implied parents, refusing
// duplicates, conflicts and paths that pass through a symlink.
func (w *walker) record(m Member) error {
	parent := path.Dir(m.Name)
	for parent != "." {
		if _, ok := w.links.targets[parent]; ok {
			return defectf(ReasonUnsafeMemberPath, "%s passes through symlink %s", m.Name, parent)
		}
		if k, ok := w.seen[parent]; ok && k != KindDir {
			return defectf(ReasonDuplicateMember, "%s is inside %s, which is a %s", m.Name, parent, k)
		}
		w.seen[parent] = KindDir
		parent = path.Dir(parent)
	}
	if k, ok := w.seen[m.Name]; ok {
		if k == KindDir && m.Kind == KindDir {
			return nil // explicit entry for an implied or repeated directory
		}
		return defectf(ReasonDuplicateMember, "%s appears more than once", m.Name)
	}
	w.seen[m.Name] = m.Kind
	if m.Kind == KindSymlink {
		w.links.add(m.Name, m.Linkname)
	}
	return nil
}

// cleanName turns a tar member name into a clean relative path, or rejects
// it. The root ("." or "./") returns "".
func cleanName(raw string) (string, error) {
	switch {
	case raw == "":
		return "", defectf(ReasonUnsafeMemberPath, "member with an empty name")
	case strings.ContainsRune(raw, 0):
		return "", defectf(ReasonUnsafeMemberPath, "member name %q contains NUL", raw)
	case strings.HasPrefix(raw, "/"):
		return "", defectf(ReasonUnsafeMemberPath, "absolute member name %q", raw)
	case strings.ContainsRune(raw, '\\'):
		return "", defectf(ReasonUnsafeMemberPath, "member name %q contains a backslash", raw)
	}
	if hasDotDot(raw) {
		return "", defectf(ReasonUnsafeMemberPath, "member name %q contains '..'", raw)
	}
	clean := path.Clean(raw)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// hasDotDot reports whether a slash-separated name has a ".." element.
func hasDotDot(name string) bool {
	for name != "" {
		part, rest, _ := strings.Cut(name, "/")
		if part == ".." {
			return true
		}
		name = rest
	}
	return false
}

// symlinkInside checks that a symlink's target, resolved lexically from the
// link's directory, stays inside the tree.
func symlinkInside(name, target string) error {
	if target == "" || strings.HasPrefix(target, "/") {
		return defectf(ReasonLinkEscapesTree, "symlink %s points to %q, outside the tree", name, target)
	}
	resolved := path.Join(path.Dir(name), target)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return defectf(ReasonLinkEscapesTree, "symlink %s points to %q, outside the tree", name, target)
	}
	return nil
}
