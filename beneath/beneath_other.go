//go:build !unix

package beneath

import (
	"errors"
	"io/fs"
	"os"
)

// Dir is an open directory below which names are resolved. On this
// system it is an os.Root: names cannot leave it, though symlinks that
// stay inside it are followed.
type Dir struct {
	root *os.Root
}

// Open opens the directory dir for use as the root of later names.
func Open(dir string) (*Dir, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r}, nil
}

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Name returns the path Dir was opened with.
func (d *Dir) Name() string { return d.root.Name() }

// Mkdir creates the directory name; its parent must exist.
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	return d.root.Mkdir(c, perm)
}

// MkdirAll creates the directory name and any missing parents.
func (d *Dir) MkdirAll(name string, perm fs.FileMode) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	return d.root.MkdirAll(c, perm)
}

// Create creates the regular file name, which must not exist.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	c, err := clean(name)
	if err != nil {
		return nil, err
	}
	return d.root.OpenFile(c, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// Open opens the existing regular file name for reading.
func (d *Dir) Open(name string) (*os.File, error) {
	c, err := clean(name)
	if err != nil {
		return nil, err
	}
	if st, err := d.root.Lstat(c); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: c, Err: errors.New("not a regular file")}
	}
	return d.root.Open(c)
}

// Symlink creates name as a symlink to target.
func (d *Dir) Symlink(target, name string) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	return d.root.Symlink(target, c)
}

// ChmodDir sets the permission bits of the directory name ("." is d).
func (d *Dir) ChmodDir(name string, mode fs.FileMode) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	return d.root.Chmod(c, mode)
}

// Exists reports whether name exists, as whatever type.
func (d *Dir) Exists(name string) (bool, error) {
	c, err := clean(name)
	if err != nil {
		return false, err
	}
	_, err = d.root.Lstat(c)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Rename moves oldname to newname, both below d.
func (d *Dir) Rename(oldname, newname string) error {
	o, err := clean(oldname)
	if err != nil {
		return err
	}
	n, err := clean(newname)
	if err != nil {
		return err
	}
	return d.root.Rename(o, n)
}

// RemoveAll removes name and everything below it.
func (d *Dir) RemoveAll(name string) error {
	c, err := clean(name)
	if err != nil {
		return err
	}
	if c == "." {
		return &fs.PathError{Op: "remove", Path: name, Err: ErrOutside}
	}
	return d.root.RemoveAll(c)
}
