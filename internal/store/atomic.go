package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/berth-dev/berth/internal/errdefs"
)

// fsyncs counts the fsyncs of files and directories this package made.
var fsyncs atomic.Uint64

// Fsyncs is the number of fsyncs (of a file or a directory) the writers of
// this package have made in this process: tests count a path's flushes
// with it.
func Fsyncs() uint64 { return fsyncs.Load() }

// flush says what a replacement makes durable before it returns.
type flush int

const (
	// flushNone: no fsync (a power loss may lose the write).
	flushNone flush = iota
	// flushData: the file's data, before the rename; not the rename.
	flushData
	// flushAll: the file's data before the rename, the directory after.
	flushAll
)

// WriteFileAtomic replaces path with data durably. It writes a temporary file
// in the same directory, syncs it, renames it over path and syncs the
// directory, so a crash at any moment, power loss included, leaves either the
// old or the new content, and the new one once it returns. On error the
// temporary file is removed and path is untouched.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return replaceFile(path, data, perm, flushAll)
}

// WriteFileVolatile replaces path with data atomically but does not flush it:
// a temporary file in the same directory renamed over path, with no fsync of
// the file or the directory. Readers, and a process killed at any moment (the
// page cache survives it), see either the old content or the new; a power
// loss may lose the write, and on some filesystems (XFS; ext4 mounted
// noauto_da_alloc) leave an empty file. It is for what a reboot clears
// anyway: the state directory. On error the temporary file is removed and
// path is untouched.
func WriteFileVolatile(path string, data []byte, perm os.FileMode) error {
	return replaceFile(path, data, perm, flushNone)
}

// replaceFile is the one temp+rename writer; f says what it flushes.
func replaceFile(path string, data []byte, perm os.FileMode, f flush) (err error) {
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
	if err := writeTemp(tmp, data, perm, f >= flushData); err != nil {
		return fmt.Errorf("file %s: temporary file %s: %w", path, tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("file %s: close temporary file: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("file %s: rename: %w", path, err)
	}
	if f < flushAll {
		return nil
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	return nil
}

func writeTemp(f *os.File, data []byte, perm os.FileMode, sync bool) error {
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if !sync {
		return nil
	}
	fsyncs.Add(1)
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
	fsyncs.Add(1)
	if err := d.Sync(); err != nil {
		return fmt.Errorf("directory %s: fsync: %w", dir, err)
	}
	return nil
}

// SaveJSON durably writes v as indented JSON to path with mode 0600
// (WriteFileAtomic). v is a versioned record: the caller's struct has a
// `Version int` field. If v cannot be encoded, path is left untouched.
func SaveJSON(path string, v any) error {
	data, err := encodeRecord(path, v)
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data, 0o600)
}

// UpdateJSON replaces a record (SaveJSON wrote it first) with v, flushing
// the new content once, before the rename, but not the rename itself: after
// a power loss the record holds its old content or the new, whole, on every
// filesystem — never an empty file. It is for record updates whose loss
// recovery handles as the previous state.
func UpdateJSON(path string, v any) error {
	data, err := encodeRecord(path, v)
	if err != nil {
		return err
	}
	return replaceFile(path, data, 0o600, flushData)
}

func encodeRecord(path string, v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("record %s: encode: %w", path, err)
	}
	return append(data, '\n'), nil
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
