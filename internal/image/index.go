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

	"github.com/berth-dev/berth/internal/store"
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
		if !errors.Is(err, unix.EINTR) {
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
	return store.WriteFileAtomic(s.generationPath(), []byte(strconv.FormatUint(n+1, 10)+"\n"), 0o600)
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
	return store.WriteFileAtomic(filepath.Join(s.indexDir(), hex+".json"), data, 0o600)
}

func (s *Store) deleteRecord(id string) error {
	hex, err := digestHex(id)
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.indexDir(), hex+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("image %s: record: %w", id, err)
	}
	return store.SyncDir(s.indexDir())
}
