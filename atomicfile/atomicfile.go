// Package atomicfile writes small files so that a crash leaves either the
// old content or the new, never a torn file: write to NAME.tmp, fsync,
// rename.
package atomicfile

import (
	"encoding/json"
	"os"
)

// Write replaces name with data atomically and durably.
func Write(name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, name)
}

// WriteJSON writes v as indented JSON with Write.
func WriteJSON(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return Write(name, append(data, '\n'))
}
