package userns

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/store"
)

// recordVersion is the version of the record's format.
const recordVersion = 1

// idMapping is one line of a uid_map or gid_map.
type idMapping struct {
	ContainerID uint32 `json:"containerId"`
	HostID      uint32 `json:"hostId"`
	Length      uint32 `json:"length"`
}

// record is a pod's allocation on disk: <dir>/<uid>.json.
type record struct {
	Version     int         `json:"version"`
	UID         string      `json:"uid"`
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

const recordSuffix = ".json"

func recordPath(dir, uid string) string { return filepath.Join(dir, uid+recordSuffix) }

// saveRecord writes the allocation of uid: hostID, BlockLength ids for
// uids and gids alike.
func saveRecord(dir, uid string, hostID uint32) error {
	m := []idMapping{{ContainerID: 0, HostID: hostID, Length: BlockLength}}
	return store.SaveJSON(recordPath(dir, uid), record{Version: recordVersion, UID: uid, UIDMappings: m, GIDMappings: m})
}

// removeRecord removes uid's record, durably; none is no error.
func removeRecord(dir, uid string) error {
	err := os.Remove(recordPath(dir, uid))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return store.SyncDir(dir)
}

// loadRecord reads the record at path and returns its pod uid and first
// host id; it checks what kubelet checks of its own file: one mapping,
// the same for uids and gids, container id 0 mapped, BlockLength long.
func loadRecord(path string) (uid string, hostID uint32, err error) {
	var r record
	if err := store.LoadVersionedJSON(path, &r, recordVersion); err != nil {
		return "", 0, err
	}
	want := strings.TrimSuffix(filepath.Base(path), recordSuffix)
	switch {
	case r.UID != want:
		return "", 0, fmt.Errorf("record %s: for pod uid %q, want %q", path, r.UID, want)
	case len(r.UIDMappings) != 1 || len(r.GIDMappings) != 1:
		return "", 0, fmt.Errorf("record %s: %d uid and %d gid mappings, want one each", path, len(r.UIDMappings), len(r.GIDMappings))
	case r.UIDMappings[0] != r.GIDMappings[0]:
		return "", 0, fmt.Errorf("record %s: uid mapping %+v and gid mapping %+v differ", path, r.UIDMappings[0], r.GIDMappings[0])
	case r.UIDMappings[0].ContainerID != 0:
		return "", 0, fmt.Errorf("record %s: container id %d mapped first, want 0", path, r.UIDMappings[0].ContainerID)
	case r.UIDMappings[0].Length != BlockLength:
		return "", 0, fmt.Errorf("record %s: length %d, want %d", path, r.UIDMappings[0].Length, BlockLength)
	}
	return r.UID, r.UIDMappings[0].HostID, nil
}

// listRecords are the paths of the records in dir. A crash mid-write
// leaves a hidden temporary file (store.WriteFileAtomic's), never a
// partial record: those and anything else are skipped.
func listRecords(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		name := e.Name()
		if e.Type().IsRegular() && !strings.HasPrefix(name, ".") && strings.HasSuffix(name, recordSuffix) {
			paths = append(paths, filepath.Join(dir, name))
		}
	}
	return paths, nil
}
