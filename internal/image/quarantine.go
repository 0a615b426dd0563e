package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/berth-dev/berth/internal/store"
)

// recordVersion is the version of the record format this berth writes; it
// reads records up to this version. Records written before the field
// existed have none (0) and are version 1.
const recordVersion = 1

// QuarantinedRecord is an index record the store could not read: it is
// left out of the index and set aside, never deleted.
type QuarantinedRecord struct {
	Path   string    `json:"-"`      // where it is now: quarantine/… once set aside, else still index/…
	Source string    `json:"source"` // where it was found, index/<hex>.json
	Reason string    `json:"reason"` // why it could not be read
	Time   time.Time `json:"time"`   // when it was set aside (not yet moved: when it was seen)
}

// badRecord is a record file readIndex skipped.
type badRecord struct {
	name   string // file name in index/
	reason string
	unread bool // the file could not be read (I/O, permissions): left in place, maybe transient
}

// parseRecord decodes and checks the record stored as index/<hex>.json.
func parseRecord(hex string, data []byte) (record, error) {
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		if !json.Valid(data) {
			return record{}, fmt.Errorf("not valid JSON (truncated?): %v; what it references is unknown, so the store deletes no blob or layer while it is in quarantine/", err)
		}
		return record{}, fmt.Errorf("unparsable: %v", err)
	}
	if rec.Version < 0 || rec.Version > recordVersion {
		return record{}, fmt.Errorf("record version %d: this berth reads versions up to %d", rec.Version, recordVersion)
	}
	if rec.Image.ID != digestPrefix+hex {
		return record{}, fmt.Errorf("image id %q does not match the file name", rec.Image.ID)
	}
	for i, l := range rec.Image.Layers {
		for _, d := range []string{l.Digest, l.DiffID, l.ChainID} {
			if _, err := digestHex(d); err != nil {
				return record{}, fmt.Errorf("layer %d: %v", i, err)
			}
		}
	}
	for i, m := range rec.Manifests {
		if _, err := digestHex(m); err != nil {
			return record{}, fmt.Errorf("manifest %d: %v", i, err)
		}
	}
	return rec, nil
}

func (s *Store) quarantineDir() string { return filepath.Join(s.root, "quarantine") }

// lockedRecords reads the index for a writer, which holds the store lock:
// records whose content is bad are moved to quarantine/ with the reason
// beside them, and the generation is bumped so readers drop them from
// their reports of records still waiting in index/. Only writers move
// records: under the lock no other writer can replace index/<hex>.json
// between the read that judged it bad and the rename, so a good record
// that a writer just put there is never the one moved. Readers only skip
// (records). unread counts the records left in index/ because they could
// not be read at all.
func (s *Store) lockedRecords() (recs map[string]record, unread int, err error) {
	recs, bad, err := s.readIndex()
	if err != nil {
		return nil, 0, err
	}
	moved := 0
	for _, b := range bad {
		if b.unread {
			unread++
			s.logger().Error("image record unreadable: skipped and kept in place", "record", filepath.Join(s.indexDir(), b.name), "reason", b.reason)
			continue
		}
		if err := s.setAside(b); err != nil {
			return nil, 0, err
		}
		moved++
	}
	if moved > 0 {
		if err := s.bumpGeneration(); err != nil {
			return nil, 0, err
		}
	}
	return recs, unread, nil
}

// setAside moves one bad record to quarantine/<time>-<name>, its reason
// first written to <that>.reason, and logs it.
func (s *Store) setAside(b badRecord) error {
	if err := os.MkdirAll(s.quarantineDir(), 0o700); err != nil {
		return fmt.Errorf("image index: quarantine: %w", err)
	}
	now := time.Now().UTC()
	src := filepath.Join(s.indexDir(), b.name)
	dst := filepath.Join(s.quarantineDir(), now.Format("20060102T150405.000000000Z")+"-"+b.name)
	q := QuarantinedRecord{Path: dst, Source: src, Reason: b.reason, Time: now}
	why, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("image index: record %s: quarantine: %w", src, err)
	}
	if err := store.WriteFileAtomic(dst+".reason", why, 0o600); err != nil {
		return fmt.Errorf("image index: record %s: quarantine: %w", src, err)
	}
	if err := os.Rename(src, dst); err != nil {
		os.Remove(dst + ".reason")
		if errors.Is(err, os.ErrNotExist) {
			return nil // another path removed it; nothing left to set aside
		}
		return fmt.Errorf("image index: record %s: quarantine: %w", src, err)
	}
	if err := store.SyncDir(s.indexDir()); err != nil {
		return err
	}
	s.logger().Error("image record set aside: the store cannot read it; its image is not listed and its blobs and layers are kept",
		"record", src, "moved_to", dst, "reason", b.reason)
	return nil
}

// Quarantined lists the index records the store could not read: those set
// aside under quarantine/ (kept until an operator removes them) and those
// readers skip that no writer has moved yet. Sorted by time.
func (s *Store) Quarantined() ([]QuarantinedRecord, error) {
	out, err := s.setAsideRecords()
	if err != nil {
		return nil, err
	}
	if _, err := s.records(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	out = append(out, s.skipped...)
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// setAsideRecords reads quarantine/: every record file with its reason.
func (s *Store) setAsideRecords() ([]QuarantinedRecord, error) {
	entries, err := os.ReadDir(s.quarantineDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("image quarantine: %w", err)
	}
	var out []QuarantinedRecord
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".reason") || strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(s.quarantineDir(), name)
		q := QuarantinedRecord{Reason: "unknown: the reason file is missing or unreadable"}
		if data, err := os.ReadFile(p + ".reason"); err == nil {
			_ = json.Unmarshal(data, &q)
		}
		if q.Time.IsZero() {
			if fi, err := e.Info(); err == nil {
				q.Time = fi.ModTime()
			}
		}
		q.Path = p
		out = append(out, q)
	}
	return out, nil
}

var anyHex64 = regexp.MustCompile(`[0-9a-f]{64}`)

// quarantineKeeps adds to keep every sha256 hex a set-aside record names,
// so that garbage collection spares the blobs and layers it may reference.
// It reports false when a record is not even valid JSON: what it referenced
// is unknown, and nothing may be collected while it is set aside.
func (s *Store) quarantineKeeps(keep map[string]bool) (bool, error) {
	recs, err := s.setAsideRecords()
	if err != nil {
		return false, err
	}
	complete := true
	for _, q := range recs {
		data, err := os.ReadFile(q.Path)
		if err != nil {
			return false, fmt.Errorf("image quarantine: %w", err)
		}
		// The file name carries the image id (the config blob's digest).
		for _, h := range anyHex64.FindAll(append(data, "\n"+filepath.Base(q.Path)...), -1) {
			keep[string(h)] = true
		}
		if !json.Valid(data) {
			complete = false
		}
	}
	return complete, nil
}
