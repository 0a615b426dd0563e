package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/berth-dev/berth/internal/errdefs"
)

// WriteFileAtomic replaces path with data. It writes a temporary file in the
// same directory, syncs it, renames it over path and syncs the directory, so a
// crash at any moment leaves either the old or the new content. On error the
// temporary file is removed and path is untouched.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-")
	if err != nil {
		return fmt.Errorf("file %s: temporary file: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := writeAndSync(tmp, data, perm); err != nil {
		return fmt.Errorf("file %s: temporary file %s: %w", path, tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("file %s: close temporary file: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("file %s: rename: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	return nil
}

func writeAndSync(f *os.File, data []byte, perm os.FileMode) error {
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	return nil
}

// SyncDir fsyncs directory dir, making a rename, create or remove in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("directory %s: open: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("directory %s: fsync: %w", dir, err)
	}
	return nil
}

// SaveJSON atomically writes v as indented JSON to path with mode 0600.
// v is a versioned record: the caller's struct has a `Version int` field.
// If v cannot be encoded, path is left untouched.
func SaveJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("record %s: encode: %w", path, err)
	}
	data = append(data, '\n')
	return WriteFileAtomic(path, data, 0o600)
}

// LoadJSON decodes the record at path into v. An absent file is an error
// wrapping errdefs.ErrNotFound; a file that is not valid JSON for v is an
// error naming the file.
func LoadJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("record %s: %w", path, errdefs.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("record %s: read: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("record %s: corrupt: %w", path, err)
	}
	return nil
}
