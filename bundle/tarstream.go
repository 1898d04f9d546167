package bundle

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// tarReader is a small, strict reader for the tar members task bundles use:
// regular files, directories, symlinks, hard links, with POSIX ustar, PAX
// ('x' records for path, linkpath and size) and GNU long-name extensions.
// It exists because archive/tar's per-header cost dominated validation of
// small bundles; it accepts a subset of what archive/tar accepts (fuzzed
// against it in tarstream_test.go) and reports anything else as an error.
type tarReader struct {
	r         io.Reader
	blk       [512]byte
	remaining int64 // content bytes left in the current member
	pad       int64 // padding after the current member's content
	scratch   []byte
	hdr       tarHeader // what Next returns: valid until the next call
}

// tarHeader is the part of a header the decoder uses.
type tarHeader struct {
	Name     string
	Linkname string
	Typeflag byte
	Mode     int64
	Size     int64
}

var (
	errTarHeader    = errors.New("invalid tar header")
	errTarTruncated = io.ErrUnexpectedEOF
)

func newTarReader(r io.Reader) *tarReader {
	return &tarReader{r: r}
}

func (t *tarReader) reset(r io.Reader) {
	t.r, t.remaining, t.pad = r, 0, 0
}

// readBlock reads one 512-byte block; a clean end of input before any byte
// is io.EOF, a partial block io.ErrUnexpectedEOF.
func (t *tarReader) readBlock() error {
	_, err := io.ReadFull(t.r, t.blk[:])
	return err
}

func (t *tarReader) skip(n int64) error {
	if n <= 0 {
		return nil
	}
	if t.scratch == nil {
		t.scratch = make([]byte, 32<<10)
	}
	for n > 0 {
		chunk := t.scratch
		if int64(len(chunk)) > n {
			chunk = chunk[:n]
		}
		k, err := io.ReadFull(t.r, chunk)
		n -= int64(k)
		if err != nil {
			if err == io.EOF {
				return errTarTruncated
			}
			return err
		}
	}
	return nil
}

// Next advances to the next member. It returns io.EOF at the end marker
// (or at a clean end of input between members). The header is valid until
// the following call.
func (t *tarReader) Next() (*tarHeader, error) {
	if err := t.skip(t.remaining + t.pad); err != nil {
		return nil, err
	}
	t.remaining, t.pad = 0, 0
	var pax map[string]string
	var longName, longLink string
	for {
		if err := t.readBlock(); err != nil {
			if err == io.EOF && pax == nil && longName == "" && longLink == "" {
				return nil, io.EOF
			}
			if err == io.EOF {
				return nil, errTarTruncated
			}
			return nil, err
		}
		if isZero(t.blk[:]) {
			// End marker: a second zero block should follow; a missing one
			// is tolerated like archive/tar does.
			if err := t.readBlock(); err != nil {
				if err == io.EOF {
					return nil, io.EOF
				}
				return nil, err
			}
			if !isZero(t.blk[:]) {
				return nil, errTarHeader
			}
			return nil, io.EOF
		}
		if !t.checksumOK() {
			return nil, errTarHeader
		}
		hdr, err := t.parseHeader()
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case 'x', 'g', 'L', 'K':
			if hdr.Size < 0 || hdr.Size > 1<<20 {
				return nil, errTarHeader
			}
			data := make([]byte, hdr.Size)
			if _, err := io.ReadFull(t.r, data); err != nil {
				return nil, truncated(err)
			}
			if err := t.skip(padding(hdr.Size)); err != nil {
				return nil, err
			}
			switch hdr.Typeflag {
			case 'x':
				if pax, err = parsePAX(data); err != nil {
					return nil, err
				}
			case 'g':
				if _, err := parsePAX(data); err != nil {
					return nil, err
				}
			case 'L':
				longName = cString(data)
			case 'K':
				longLink = cString(data)
			}
			continue
		}
		if longName != "" {
			hdr.Name = longName
		}
		if longLink != "" {
			hdr.Linkname = longLink
		}
		if pax != nil {
			if v, ok := pax["path"]; ok {
				hdr.Name = v
			}
			if v, ok := pax["linkpath"]; ok {
				hdr.Linkname = v
			}
			if v, ok := pax["size"]; ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					return nil, errTarHeader
				}
				hdr.Size = n
			}
		}
		switch hdr.Typeflag {
		case '0', 0, '7':
			hdr.Typeflag = '0'
		case '1', '2', '3', '4', '5', '6':
			hdr.Size = 0 // no content for links, devices, dirs, FIFOs
		default:
			// Unknown or unsupported (e.g. GNU sparse): report by type;
			// the caller rejects it. Its content must still be skipped.
		}
		if hdr.Size < 0 {
			return nil, errTarHeader
		}
		if hdr.Typeflag == '0' || !isKnownType(hdr.Typeflag) {
			t.remaining, t.pad = hdr.Size, padding(hdr.Size)
		}
		return hdr, nil
	}
}

func isKnownType(b byte) bool { return b >= '0' && b <= '7' }

func truncated(err error) error {
	if err == io.EOF {
		return errTarTruncated
	}
	return err
}

// Read reads the current member's content.
func (t *tarReader) Read(p []byte) (int, error) {
	if t.remaining <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > t.remaining {
		p = p[:t.remaining]
	}
	n, err := t.r.Read(p)
	t.remaining -= int64(n)
	if err == io.EOF {
		if t.remaining > 0 {
			return n, errTarTruncated
		}
		err = nil
	}
	return n, err
}

func padding(size int64) int64 { return -size & 511 }

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// checksumOK verifies the header checksum (unsigned, or the historic signed
// variant), with the checksum field itself counted as spaces.
func (t *tarReader) checksumOK() bool {
	want, ok := parseNumeric(t.blk[148:156])
	if !ok {
		return false
	}
	unsigned := int64(byteSum(&t.blk)) - int64(byteSum8(t.blk[148:156])) + 8*' '
	if want == unsigned {
		return true
	}
	var signed int64 // historic tar implementations summed signed bytes
	for i, c := range t.blk {
		if i >= 148 && i < 156 {
			c = ' '
		}
		signed += int64(int8(c))
	}
	return want == signed
}

// byteSum adds up a block's bytes eight at a time: two 16-bit lanes per
// byte pair of each word cannot overflow over 64 words (64 × 2 × 255).
// The byte-at-a-time loop it replaces was a few percent of validating a
// pool of small bundles, which are mostly headers.
func byteSum(b *[512]byte) uint64 {
	const lanes = 0x00ff00ff00ff00ff
	var acc uint64
	for i := 0; i < len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		acc += w&lanes + (w>>8)&lanes
	}
	// Fold the four 16-bit lanes.
	acc = acc&0xffff + (acc>>16)&0xffff + (acc>>32)&0xffff + acc>>48
	return acc
}

func byteSum8(b []byte) uint64 {
	var s uint64
	for _, c := range b {
		s += uint64(c)
	}
	return s
}

func (t *tarReader) parseHeader() (*tarHeader, error) {
	b := &t.blk
	hdr := &t.hdr
	*hdr = tarHeader{Typeflag: b[156]}
	name := cString(b[0:100])
	hdr.Linkname = cString(b[157:257])
	magic := string(b[257:263])
	version := string(b[263:265])
	if magic == "ustar\x00" && version == "00" {
		// POSIX ustar: the prefix field extends the name.
		if prefix := cString(b[345:500]); prefix != "" {
			name = prefix + "/" + name
		}
	}
	hdr.Name = name
	mode, ok := parseNumeric(b[100:108])
	if !ok {
		return nil, errTarHeader
	}
	hdr.Mode = mode
	size, ok := parseNumeric(b[124:136])
	if !ok || size < 0 {
		return nil, errTarHeader
	}
	hdr.Size = size
	return hdr, nil
}

// parseNumeric reads an octal field (NUL/space padded) or a base-256 one.
func parseNumeric(b []byte) (int64, bool) {
	if len(b) > 0 && b[0]&0x80 != 0 {
		// Base-256, big endian, first byte's high bit is the marker.
		if b[0]&0x40 != 0 {
			return 0, false // negative
		}
		var v int64
		for i, c := range b {
			if i == 0 {
				c &= 0x3f
			}
			if v>>55 != 0 {
				return 0, false
			}
			v = v<<8 | int64(c)
		}
		return v, true
	}
	s := strings.Trim(string(b), " \x00")
	if s == "" {
		return 0, true
	}
	v, err := strconv.ParseInt(s, 8, 64)
	return v, err == nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// parsePAX parses "%d key=value\n" records.
func parsePAX(data []byte) (map[string]string, error) {
	out := map[string]string{}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			return nil, errTarHeader
		}
		n, err := strconv.Atoi(string(data[:sp]))
		if err != nil || n <= sp+1 || n > len(data) {
			return nil, errTarHeader
		}
		rec := data[sp+1 : n]
		data = data[n:]
		if len(rec) == 0 || rec[len(rec)-1] != '\n' {
			return nil, errTarHeader
		}
		k, v, ok := bytes.Cut(rec[:len(rec)-1], []byte("="))
		if !ok || len(k) == 0 {
			return nil, errTarHeader
		}
		if bytes.IndexByte(k, 0) >= 0 || bytes.IndexByte(v, 0) >= 0 && string(k) != "SCHILY.xattr" {
			return nil, fmt.Errorf("%w: NUL in PAX record", errTarHeader)
		}
		out[string(k)] = string(v)
	}
	return out, nil
}
