package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// ExitFilePath is where the exit file of container id lives in dir.
func ExitFilePath(dir, id string) string {
	return filepath.Join(dir, id+".json")
}

// WriteExitFile atomically writes r as <dir>/<r.ID>.json: a temporary file
// is written and renamed (store.WriteFileVolatile). It is not flushed: dir
// is under berth's state directory, which a reboot clears, and a kill -9 of
// the monitor or the daemon after the rename loses nothing (the page cache
// survives it).
func WriteExitFile(dir string, r ExitRecord) error {
	if err := ValidID(r.ID); err != nil {
		return fmt.Errorf("exit file: %w", err)
	}
	if r.Version == 0 {
		r.Version = ExitRecordVersion
	}
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("exit file %s: encode: %w", r.ID, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("exit file %s: directory: %w", r.ID, err)
	}
	if err := store.WriteFileVolatile(ExitFilePath(dir, r.ID), data, 0o600); err != nil {
		return fmt.Errorf("exit file %s: %w", r.ID, err)
	}
	return nil
}

// ReadExitFile reads the exit file of container id; ErrNotFound when the
// container has not exited (or its file was removed).
func ReadExitFile(dir, id string) (*ExitRecord, error) {
	if err := ValidID(id); err != nil {
		return nil, fmt.Errorf("exit file: %w", err)
	}
	data, err := os.ReadFile(ExitFilePath(dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("exit file %s: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("exit file %s: %w", id, err)
	}
	var r ExitRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("exit file %s: decode: %w", id, err)
	}
	if r.Version != ExitRecordVersion {
		return nil, fmt.Errorf("exit file %s: version %d: %w", id, r.Version, errdefs.ErrFailedPrecondition)
	}
	return &r, nil
}
