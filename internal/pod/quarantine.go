package pod

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// Kinds of a QuarantinedRecord.
const (
	KindSandbox   = "sandbox"
	KindContainer = "container"
)

// QuarantinedRecord is a record recovery set aside: it could not be read, or
// it depends on one that could not. Berth leaves it and everything that
// depends on it alone and does not report it to kubelet; a person restores
// or removes it (docs/architecture.md, "Crash safety and recovery").
type QuarantinedRecord struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Path   string `json:"path"` // the record file, where it is now
	Reason string `json:"reason"`
	// SandboxID, ImageID and ImageVolumes, when the record still tells
	// them.
	SandboxID    string        `json:"sandboxId,omitempty"`
	ImageID      string        `json:"imageId,omitempty"`
	ImageVolumes []ImageVolume `json:"imageVolumes,omitempty"`
}

// images is what the record tells of the images its container uses.
func (r QuarantinedRecord) images() Container {
	return Container{ImageID: r.ImageID, ImageVolumes: r.ImageVolumes}
}

// QuarantineSuffix is appended to the name of a quarantined record file.
const QuarantineSuffix = ".quarantined"

// quarantineNote is the file beside a quarantined record that says why and
// what to do.
const quarantineNote = "QUARANTINED"

// quarantineSet holds the quarantined records by kind and id.
type quarantineSet struct {
	mu   sync.Mutex
	recs map[string]QuarantinedRecord
}

func quarantineKey(kind, id string) string { return kind + "/" + id }

func (q *quarantineSet) add(r QuarantinedRecord) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.recs == nil {
		q.recs = map[string]QuarantinedRecord{}
	}
	q.recs[quarantineKey(r.Kind, r.ID)] = r
}

func (q *quarantineSet) has(kind, id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.recs[quarantineKey(kind, id)]
	return ok
}

// list returns the records sorted by kind and id; keep filters them.
func (q *quarantineSet) list(keep func(QuarantinedRecord) bool) []QuarantinedRecord {
	q.mu.Lock()
	out := make([]QuarantinedRecord, 0, len(q.recs))
	for _, r := range q.recs {
		if keep == nil || keep(r) {
			out = append(out, r)
		}
	}
	q.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		return quarantineKey(out[i].Kind, out[i].ID) < quarantineKey(out[j].Kind, out[j].ID)
	})
	return out
}

// Quarantined lists the records recovery set aside, sorted by kind and id.
func (s *Service) Quarantined() []QuarantinedRecord { return s.quarantine.list(nil) }

// quarantineRecord sets aside the record of kind and id at path that failed
// to load with loadErr: it renames the file to <name>.quarantined, writes a
// note beside it, logs and remembers it. A record found already renamed by an
// earlier start stays so. A record that is simply absent is not quarantined:
// it reports false.
func (s *Service) quarantineRecord(kind, id, path string, loadErr error) bool {
	moved := path + QuarantineSuffix
	if errdefs.IsNotFound(loadErr) {
		if _, err := os.Lstat(moved); err != nil {
			return false
		}
		loadErr = fmt.Errorf("quarantined by an earlier start: %s", noteReason(filepath.Dir(path)))
	} else if err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, moved, unix.RENAME_NOREPLACE); err != nil {
		s.log.Error("recovery: cannot move a quarantined record aside; it stays in place", "kind", kind, "path", path, "error", err)
		moved = path
	} else if err := writeQuarantineNote(path, kind, loadErr.Error()); err != nil {
		s.log.Error("recovery: quarantine note", "kind", kind, "path", path, "error", err)
	}
	r := QuarantinedRecord{Kind: kind, ID: id, Path: moved, Reason: loadErr.Error()}
	r.SandboxID, r.ImageID, r.ImageVolumes = recordHints(moved)
	s.quarantine.add(r)
	s.log.Error("recovery: record quarantined; it and everything that depends on it are left alone",
		"kind", kind, "id", id, "path", moved, "reason", r.Reason)
	return true
}

// holdContainer sets aside a readable container record whose sandbox is
// quarantined: it stays where it is and loads again once the sandbox does.
func (s *Service) holdContainer(path string, rec *Container) {
	s.quarantine.add(QuarantinedRecord{
		Kind: KindContainer, ID: rec.ID, Path: path, SandboxID: rec.SandboxID, ImageID: rec.ImageID, ImageVolumes: rec.ImageVolumes,
		Reason: fmt.Sprintf("its pod sandbox %s is quarantined", rec.SandboxID),
	})
	s.log.Warn("recovery: container left alone: its pod sandbox is quarantined",
		"id", rec.ID, "sandbox", rec.SandboxID, "path", path)
}

// recordHints reads the sandbox and image ids and the image volumes from a
// record berth could not use, when its JSON still parses; else zero.
func recordHints(path string) (sandboxID, imageID string, volumes []ImageVolume) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", nil
	}
	var h struct {
		SandboxID    string        `json:"sandboxId"`
		ImageID      string        `json:"imageId"`
		ImageVolumes []ImageVolume `json:"imageVolumes"`
	}
	if json.Unmarshal(data, &h) != nil || !validID(h.SandboxID) {
		h.SandboxID = ""
	}
	return h.SandboxID, h.ImageID, h.ImageVolumes
}

// writeQuarantineNote writes the note beside the record that was at path.
func writeQuarantineNote(path, kind, reason string) error {
	note := quarantineNoteText(kind, filepath.Base(path), reason, time.Now())
	return store.WriteFileAtomic(filepath.Join(filepath.Dir(path), quarantineNote), []byte(note), 0o600)
}

// quarantineNoteText is the note beside a quarantined record, for a person.
func quarantineNoteText(kind, name, reason string, at time.Time) string {
	return fmt.Sprintf(`berth could not use this %[1]s record and quarantined it at %[2]s.
reason: %[3]s

The record was renamed to %[4]s%[5]s. Berth leaves it, and everything that
depends on it, alone: it does not kill, delete, unmount, unpin or release
anything of this %[1]s, and does not report it to kubelet.

To restore: repair %[4]s%[5]s, rename it back to %[4]s, delete this
file and restart berth. To drop it: clean up by hand what it owned, then
delete this directory (docs/architecture.md, "Crash safety and recovery").
`, kind, at.UTC().Format(time.RFC3339), strings.ReplaceAll(reason, "\n", " "), name, QuarantineSuffix)
}

// noteReason returns the reason line of the note in dir.
func noteReason(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, quarantineNote))
	if err != nil {
		return "see the " + QuarantineSuffix + " file"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if r, ok := strings.CutPrefix(line, "reason: "); ok {
			return r
		}
	}
	return "see " + filepath.Join(dir, quarantineNote)
}

// clearQuarantineNote removes the note of a record that loads again: a
// person restored it.
func (s *Service) clearQuarantineNote(dir string) {
	err := os.Remove(filepath.Join(dir, quarantineNote))
	if err == nil {
		s.log.Info("recovery: quarantined record restored", "dir", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("recovery: quarantine note", "dir", dir, "error", err)
	}
}

// refuseIfQuarantinedUsers fails a stop or remove of a sandbox that a
// quarantined container record names: that container may still run in the
// pod's namespaces, on its IP.
func (s *Service) refuseIfQuarantinedUsers(sandboxID string) error {
	users := s.quarantine.list(func(r QuarantinedRecord) bool {
		return r.Kind == KindContainer && r.SandboxID == sandboxID
	})
	if len(users) == 0 {
		return nil
	}
	return fmt.Errorf("pod sandbox %s: quarantined container record %s may still use it; repair or remove it by hand first: %w",
		sandboxID, users[0].Path, errdefs.ErrFailedPrecondition)
}

// quarantinedImageUsers lists the quarantined containers that may stand on
// an image's layers: those that name it (Container.ImageIDs), and those
// whose image is unknown.
func (s *Service) quarantinedImageUsers(imageID string) []string {
	var ids []string
	for _, r := range s.quarantine.list(func(r QuarantinedRecord) bool { return r.Kind == KindContainer }) {
		switch {
		case r.images().UsesImage(imageID):
			ids = append(ids, r.ID+" (quarantined)")
		case r.ImageID == "":
			ids = append(ids, r.ID+" (quarantined, image unknown)")
		}
	}
	return ids
}
