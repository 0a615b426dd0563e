package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/berth-dev/berth/internal/errdefs"
)

// ErrUnknownVersion marks a record whose version this berth does not know:
// missing, zero, or newer than it writes (what a downgrade leaves behind).
var ErrUnknownVersion = errors.New("unknown record version")

// CheckVersion reads only the version field of an encoded record and checks
// that it is between 1 and current. It runs before the rest is decoded, so a
// newer record is named as such even when its other fields changed shape.
func CheckVersion(data []byte, current int) error {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("corrupt: %w", err)
	}
	switch {
	case head.Version == nil:
		return fmt.Errorf("no version field: %w", ErrUnknownVersion)
	case *head.Version > current:
		return fmt.Errorf("version %d is newer than %d, the newest this berth reads: %w", *head.Version, current, ErrUnknownVersion)
	case *head.Version < 1:
		return fmt.Errorf("version %d: %w", *head.Version, ErrUnknownVersion)
	}
	return nil
}

// LoadVersionedJSON is LoadJSON for a record whose version must be between
// 1 and current: the version is checked (CheckVersion) before v is decoded.
func LoadVersionedJSON(path string, v any, current int) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("record %s: %w", path, errdefs.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("record %s: read: %w", path, err)
	}
	if err := CheckVersion(data, current); err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("record %s: corrupt: %w", path, err)
	}
	return nil
}
