package bundle

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Extract writes a bundle into dest, which must not exist yet. Nothing is
// ever written outside dest: member names are validated by Walk, dest is
// fresh so no pre-existing link can redirect a write, and symlinks are
// created last so no member is ever written through one. On any error the
// partial tree is removed.
func Extract(r io.Reader, dest string, lim Limits) (err error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dest, 0o755); err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer func() {
		if err != nil {
			_ = makeWritable(dest)
			_ = os.RemoveAll(dest)
		}
	}()
	type pending struct {
		path string
		mode fs.FileMode
		link string
	}
	var dirs, links []pending
	err = Walk(r, lim, func(m Member, content io.Reader) error {
		target := filepath.Join(dest, filepath.FromSlash(m.Name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		switch m.Kind {
		case KindDir:
			if err := os.Mkdir(target, 0o755); err != nil && !os.IsExist(err) {
				return err
			}
			dirs = append(dirs, pending{path: target, mode: m.Mode})
		case KindFile:
			return writeFile(target, m.Mode, content)
		case KindHardlink:
			src, err := os.Open(filepath.Join(dest, filepath.FromSlash(m.Linkname)))
			if err != nil {
				return err
			}
			defer src.Close()
			info, err := src.Stat()
			if err != nil {
				return err
			}
			return writeFile(target, info.Mode().Perm(), src)
		case KindSymlink:
			links = append(links, pending{path: target, link: m.Linkname})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, l := range links {
		if err := os.Symlink(l.link, l.path); err != nil {
			return err
		}
	}
	// Deepest first, so a read-only directory does not block its children.
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].path > dirs[j].path })
	for _, d := range dirs {
		if err := os.Chmod(d.path, d.mode|0o700); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(target string, mode fs.FileMode, content io.Reader) error {
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, content); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func makeWritable(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}
