package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lock takes the store's writer lock (flock on <root>/lock). Each call opens
// its own file description, so it also excludes goroutines of this process.
func (s *Store) lock() (unlock func(), err error) {
	f, err := os.OpenFile(s.lockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("image store lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("image store lock: flock: %w", err)
	}
	return func() { f.Close() }, nil
}

func (s *Store) readGeneration() (string, error) {
	data, err := os.ReadFile(s.generationPath())
	if errors.Is(err, os.ErrNotExist) {
		return "0", nil
	}
	if err != nil {
		return "", fmt.Errorf("image index: generation: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// bumpGeneration tells readers the index changed. Call with the lock held,
// after the records are written.
func (s *Store) bumpGeneration() error {
	cur, err := s.readGeneration()
	if err != nil {
		return err
	}
	n, _ := strconv.ParseUint(cur, 10, 64)
	return writeFileAtomic(s.generationPath(), []byte(strconv.FormatUint(n+1, 10)+"\n"))
}

func (s *Store) writeRecord(rec record) error {
	hex, err := digestHex(rec.Image.ID)
	if err != nil {
		return err
	}
	rec.Version = recordVersion
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("image %s: record: %w", rec.Image.ID, err)
	}
	return writeFileAtomic(filepath.Join(s.indexDir(), hex+".json"), data)
}

func (s *Store) deleteRecord(id string) error {
	hex, err := digestHex(id)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.indexDir(), hex+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("image %s: record: %w", id, err)
	}
	return syncDir(s.indexDir())
}

// writeFileAtomic replaces path with data: temp file, fsync, rename, fsync dir.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	if err = f.Chmod(0o600); err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("file %s: fsync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("file %s: rename: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("dir %s: fsync: %w", dir, err)
	}
	return nil
}
