package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/otcurate/otcurate/bundle"
	"github.com/otcurate/otcurate/sandbox"
)

// maxSymlinkHops bounds the symlinks Download follows.
const maxSymlinkHops = 8

// Upload copies files into dir (an absolute path, created if missing) as
// one tar stream: owned by root, modes kept, parent directories of nested
// members created 0755.
func (s *dockerSandbox) Upload(ctx context.Context, dir string, files []bundle.Entry) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("upload: %q is not an absolute path", dir)
	}
	if s.isStopped() {
		return errSandboxStopped
	}
	if s.direct != nil {
		if err := s.direct.upload(dir, files); !errors.Is(err, errNotDirect) {
			return err
		}
	}
	var buf bytes.Buffer
	if err := writeTar(&buf, files); err != nil {
		return fmt.Errorf("upload to %s: %w", dir, err)
	}
	if err := s.ensureDir(ctx, dir); err != nil {
		return err
	}
	_, err := s.d.cli.CopyToContainer(ctx, s.id, client.CopyToContainerOptions{DestinationPath: dir, Content: &buf})
	return engineError(ctx, "upload to "+dir, err)
}

// ensureDir creates dir (mkdir -p, as root) unless it exists; a stat is
// cheaper than an exec, which is needed only for a new directory.
func (s *dockerSandbox) ensureDir(ctx context.Context, dir string) error {
	st, err := s.d.cli.ContainerStatPath(ctx, s.id, client.ContainerStatPathOptions{Path: dir})
	if err == nil {
		if !st.Stat.Mode.IsDir() && st.Stat.LinkTarget == "" {
			return fmt.Errorf("upload: %s exists and is not a directory", dir)
		}
		return nil
	}
	if !cerrdefs.IsNotFound(err) || isNoSuchContainer(err) {
		return engineError(ctx, "stat "+dir, err)
	}
	res, err := s.Exec(ctx, sandbox.ExecRequest{Cmd: "mkdir -p -- " + sandbox.ShellQuote(dir), User: "root", Timeout: time.Minute})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("upload: mkdir -p %s: exit %d: %s", dir, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}

// Download reads the regular file at p (symlinks followed), at most max
// bytes: a longer file is cut at max. max <= 0 means DefaultMaxOutput. A
// missing file is ErrNotFound; a directory or device is an error.
func (s *dockerSandbox) Download(ctx context.Context, p string, max int64) ([]byte, error) {
	if max <= 0 {
		max = sandbox.DefaultMaxOutput
	}
	if s.isStopped() {
		return nil, errSandboxStopped
	}
	if s.direct != nil {
		if data, err := s.direct.readFile(p, max); !errors.Is(err, errNotDirect) {
			return data, err
		}
	}
	for range maxSymlinkHops {
		res, err := s.d.cli.CopyFromContainer(ctx, s.id, client.CopyFromContainerOptions{SourcePath: p})
		if err != nil {
			if cerrdefs.IsNotFound(err) && !isNoSuchContainer(err) {
				return nil, fmt.Errorf("download %s: %w", p, sandbox.ErrNotFound)
			}
			return nil, engineError(ctx, "download "+p, err)
		}
		data, link, err := readOneFile(res.Content, max)
		_ = res.Content.Close()
		if err != nil {
			if errors.Is(err, errNotRegular) {
				return nil, fmt.Errorf("download %s: %w", p, err)
			}
			return nil, engineError(ctx, "download "+p, err)
		}
		if link == "" {
			return data, nil
		}
		if !path.IsAbs(link) {
			link = path.Join(path.Dir(p), link)
		}
		p = link
	}
	return nil, fmt.Errorf("download: too many symlinks from %s", p)
}

var errNotRegular = sandbox.ErrNotRegular

// readOneFile reads the first member of a tar stream: its content (at most
// max bytes) when it is a regular file, its target when it is a symlink.
func readOneFile(r io.Reader, max int64) (data []byte, link string, err error) {
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil {
		return nil, "", fmt.Errorf("reading the archive: %w", err)
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		data, err := io.ReadAll(io.LimitReader(tr, max))
		return data, "", err
	case tar.TypeSymlink:
		return nil, hdr.Linkname, nil
	case tar.TypeDir:
		return nil, "", fmt.Errorf("is a directory: %w", errNotRegular)
	}
	return nil, "", fmt.Errorf("tar type %q: %w", hdr.Typeflag, errNotRegular)
}

// shellQuote quotes s for bash.
