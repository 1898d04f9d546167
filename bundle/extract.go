package bundle

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/otcurate/otcurate/beneath"
)

// Extract writes a bundle into dest, which must not exist yet; see
// ExtractAt.
func Extract(r io.Reader, dest string, lim Limits) error {
	dest = filepath.Clean(dest)
	parent := filepath.Dir(dest)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	dir, err := beneath.Open(parent)
	if err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer dir.Close()
	return ExtractAt(r, dir, filepath.Base(dest), lim)
}

// ExtractAt writes a bundle into name below dir; name must not exist yet.
// Nothing is ever written outside it: member names are validated by Walk
// (no "..", none through a symlink, link targets resolved inside the
// tree), every path is created through dir without following a symlink,
// and symlinks are created last so no member is ever written through one.
// On any error the partial tree is removed.
func ExtractAt(r io.Reader, dir *beneath.Dir, name string, lim Limits) (err error) {
	if err := dir.Mkdir(name, 0o755); err != nil {
		return fmt.Errorf("extract: %w", err)
	}
	defer func() {
		if err != nil {
			_ = dir.RemoveAll(name) // also removes read-only directories
		}
	}()
	type pending struct {
		path string
		mode fs.FileMode
		link string
	}
	var dirs, links []pending
	made := map[string]bool{name: true} // directories known to exist
	mkdirs := func(p string) error {
		if made[p] {
			return nil
		}
		if err := dir.MkdirAll(p, 0o755); err != nil {
			return err
		}
		made[p] = true
		return nil
	}
	err = Walk(r, lim, func(m Member, content io.Reader) error {
		target := name + "/" + m.Name
		if err := mkdirs(path.Dir(target)); err != nil {
			return err
		}
		switch m.Kind {
		case KindDir:
			if err := dir.Mkdir(target, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			made[target] = true
			dirs = append(dirs, pending{path: target, mode: m.Mode})
		case KindFile:
			return writeFile(dir, target, m.Mode, content)
		case KindHardlink:
			src, err := dir.Open(name + "/" + m.Linkname)
			if err != nil {
				return err
			}
			defer src.Close()
			info, err := src.Stat()
			if err != nil {
				return err
			}
			return writeFile(dir, target, info.Mode().Perm(), src)
		case KindSymlink:
			links = append(links, pending{path: target, link: m.Linkname})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, l := range links {
		if err := dir.Symlink(l.link, l.path); err != nil {
			return err
		}
	}
	// Deepest first, so a read-only directory does not block its children.
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].path > dirs[j].path })
	for _, d := range dirs {
		if err := dir.ChmodDir(d.path, d.mode|0o700); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(dir *beneath.Dir, target string, mode fs.FileMode, content io.Reader) error {
	f, err := dir.Create(target, 0o600)
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
