package poolgen

import (
	"archive/tar"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/otcurate/otcurate/bundle"
)

// Codec-level defects are delivered as raw bytes that bundle.Encode cannot
// produce. They start from the task's real entries, packed exactly like
// bundle.Encode does, and then break the archive.

var epoch = time.Unix(0, 0).UTC()

// encode packs entries with bundle.Encode.
func encode(entries []bundle.Entry) ([]byte, error) {
	var buf bytes.Buffer
	if err := bundle.Encode(&buf, entries); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plainTar returns the uncompressed tar stream bundle.Encode would produce.
func plainTar(entries []bundle.Entry) ([]byte, error) {
	blob, err := encode(entries)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// tarBody returns the tar stream without its end-of-archive marker, so more
// members can be appended.
func tarBody(entries []bundle.Entry) ([]byte, error) {
	t, err := plainTar(entries)
	if err != nil {
		return nil, err
	}
	if len(t) < 1024 || !bytes.Equal(t[len(t)-1024:], make([]byte, 1024)) {
		return nil, fmt.Errorf("poolgen: unexpected tar trailer")
	}
	return t[:len(t)-1024], nil
}

func gzipBytes(data []byte) []byte {
	var buf bytes.Buffer
	level := gzip.BestCompression
	if len(data) > 1<<20 {
		level = gzip.BestSpeed // too_many_members: ~10 MB of tar headers
	}
	zw, _ := gzip.NewWriterLevel(&buf, level)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

// withExtraMembers appends members to the task's tar and gzips it.
func withExtraMembers(entries []bundle.Entry, add func(tw *tar.Writer) error) ([]byte, error) {
	body, err := tarBody(entries)
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(body)
	tw := tar.NewWriter(buf)
	if err := add(tw); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return gzipBytes(buf.Bytes()), nil
}

func fileHeader(name string, size int64) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: epoch, Format: tar.FormatUSTAR}
}

// codecBlob builds the blob of a codec-level defect from the task entries.
func codecBlob(kind string, r *rand.Rand, entries []bundle.Entry, params map[string]any) ([]byte, error) {
	switch kind {
	case DefectEmptyBlob:
		return []byte{}, nil
	case DefectNotGzip:
		mode := pick(r, []string{"plain_tar", "plain_tar", "zstd_magic", "text"})
		params["mode"] = mode
		switch mode {
		case "plain_tar":
			return plainTar(entries)
		case "zstd_magic":
			b := []byte{0x28, 0xb5, 0x2f, 0xfd}
			for i := rint(r, 200, 2000); i > 0; i-- {
				b = append(b, byte(r.IntN(256)))
			}
			return b, nil
		default:
			var b bytes.Buffer
			for _, e := range entries {
				fmt.Fprintf(&b, "==> %s <==\n%s\n", e.Name, e.Data)
			}
			return b.Bytes(), nil
		}
	case DefectTruncatedGzip:
		blob, err := encode(entries)
		if err != nil {
			return nil, err
		}
		cut := len(blob)/4 + r.IntN(len(blob)/2)
		params["cut_at"] = cut
		params["full_size"] = len(blob)
		return blob[:cut], nil
	case DefectNotTar:
		mode := pick(r, []string{"random_bytes", "gzipped_text"})
		params["mode"] = mode
		if mode == "random_bytes" {
			b := make([]byte, rint(r, 1024, 8192))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return gzipBytes(b), nil
		}
		var b bytes.Buffer
		for b.Len() < 1024 {
			for _, e := range entries {
				if e.Kind == bundle.KindFile {
					b.Write(e.Data)
				}
			}
		}
		return gzipBytes(b.Bytes()), nil
	case DefectAbsoluteMember, DefectDotdotMember:
		names := []string{"/etc/cron.d/poolgen", "/app/solution.py", "/root/.bashrc", "/tmp/payload.sh"}
		if kind == DefectDotdotMember {
			names = []string{"../../etc/x", "tests/../../../tmp/evil.sh", "../outside.txt", "environment/../../.ssh/authorized_keys"}
		}
		name := pick(r, names)
		params["member"] = name
		payload := []byte("#!/bin/sh\necho pwned\n")
		return withExtraMembers(entries, func(tw *tar.Writer) error {
			h := fileHeader(name, int64(len(payload)))
			h.Mode = 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			_, err := tw.Write(payload)
			return err
		})
	case DefectLinkEscape:
		l := pick(r, [][2]string{{"environment/passwd", "/etc/passwd"}, {"tests/fixtures", "../../.."}, {"environment/data", "../../../../var/lib"}})
		params["member"], params["target"] = l[0], l[1]
		return withExtraMembers(entries, func(tw *tar.Writer) error {
			return tw.WriteHeader(&tar.Header{Name: l[0], Typeflag: tar.TypeSymlink, Linkname: l[1], Mode: 0o777, ModTime: epoch, Format: tar.FormatUSTAR})
		})
	case DefectDeviceFile:
		d := pick(r, []struct {
			name         string
			major, minor int64
		}{{"environment/dev/null", 1, 3}, {"tests/tty", 5, 0}, {"environment/random", 1, 8}})
		params["member"] = d.name
		return withExtraMembers(entries, func(tw *tar.Writer) error {
			return tw.WriteHeader(&tar.Header{Name: d.name, Typeflag: tar.TypeChar, Devmajor: d.major, Devminor: d.minor,
				Mode: 0o666, ModTime: epoch, Format: tar.FormatUSTAR})
		})
	case DefectTooManyMembers:
		n := rint(r, 20001, 22000)
		params["extra_members"] = n
		return withExtraMembers(entries, func(tw *tar.Writer) error {
			for i := 0; i < n; i++ {
				if err := tw.WriteHeader(fileHeader(fmt.Sprintf("tests/fixtures/case_%05d.json", i), 0)); err != nil {
					return err
				}
			}
			return nil
		})
	case DefectGzipBomb:
		return gzipBomb(r, entries, params)
	}
	return nil, fmt.Errorf("poolgen: %s is not a codec defect", kind)
}

// ---- gzip bomb ----

const mib = 1 << 20

var zeroMiB = make([]byte, mib)

var (
	zeroBlockOnce sync.Once
	zeroBlock     []byte
)

// steadyZeroBlock returns deflate bytes (a sequence of byte-aligned,
// non-final blocks ending with a sync flush) that inflate to exactly 1 MiB
// of zeros provided the preceding 32 KiB of output are zeros.
func steadyZeroBlock() []byte {
	zeroBlockOnce.Do(func() {
		var buf bytes.Buffer
		fw, _ := flate.NewWriter(&buf, flate.BestCompression)
		fw.Write(zeroMiB[:64<<10])
		fw.Flush()
		mark := buf.Len()
		fw.Write(zeroMiB)
		fw.Flush()
		zeroBlock = append([]byte(nil), buf.Bytes()[mark:]...)
	})
	return zeroBlock
}

// bombWriter writes a gzip member by hand so long runs of zeros can be
// emitted as repeated precomputed deflate blocks: a 600+ MiB member costs a
// few milliseconds and stays in bounded memory.
type bombWriter struct {
	out  bytes.Buffer
	fw   *flate.Writer
	crc  uint32
	size uint64
}

func newBombWriter() *bombWriter {
	b := &bombWriter{}
	// gzip header: magic, deflate, no flags, mtime 0, xfl 2 (best), OS unknown.
	b.out.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255})
	b.fw, _ = flate.NewWriter(&b.out, flate.BestCompression)
	return b
}

func (b *bombWriter) Write(p []byte) (int, error) {
	b.crc = crc32.Update(b.crc, crc32.IEEETable, p)
	b.size += uint64(len(p))
	return b.fw.Write(p)
}

func (b *bombWriter) zeros(n int64) {
	if n >= 4*mib {
		b.Write(zeroMiB[:64<<10]) // the window is now all zeros
		n -= 64 << 10
		b.fw.Flush()
		blk := steadyZeroBlock()
		for ; n >= mib+64<<10; n -= mib {
			b.out.Write(blk)
			b.crc = crc32.Update(b.crc, crc32.IEEETable, zeroMiB)
			b.size += mib
		}
	}
	for n > 0 {
		k := min(n, mib)
		b.Write(zeroMiB[:k])
		n -= k
	}
}

func (b *bombWriter) close() []byte {
	b.fw.Close()
	var tail [8]byte
	binary.LittleEndian.PutUint32(tail[:4], b.crc)
	binary.LittleEndian.PutUint32(tail[4:], uint32(b.size))
	b.out.Write(tail[:])
	return b.out.Bytes()
}

// gzipBomb appends a few members of zeros, each under the decoder's
// per-file limit (256 MiB) but together more than 600 MiB, so the decoder
// must stop on the total inflated size (uncompressed_too_large). The blob is
// about 600-700 KB.
func gzipBomb(r *rand.Rand, entries []bundle.Entry, params map[string]any) ([]byte, error) {
	body, err := tarBody(entries)
	if err != nil {
		return nil, err
	}
	b := newBombWriter()
	b.Write(body)
	names := []string{"environment/models/weights.part0", "environment/models/weights.part1", "environment/models/weights.part2"}
	var total int64
	for _, name := range names {
		size := int64(rint(r, 201, 250)) * mib
		total += size
		var hdr bytes.Buffer
		tw := tar.NewWriter(&hdr)
		if err := tw.WriteHeader(fileHeader(name, size)); err != nil {
			return nil, err
		}
		// tw is abandoned without writing the content: only the 512-byte
		// header block is used, the content is streamed below.
		b.Write(hdr.Bytes())
		b.zeros(size + (512-size%512)%512)
	}
	b.zeros(1024) // end-of-archive marker
	params["inflated_bytes"] = total
	return b.close(), nil
}
