package sourcestore

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// keyFile holds the digest key; keySize is its length.
const (
	keyFile = "digest.key"
	keySize = 32
	// recordVersion is the version of the record format.
	recordVersion = 1
)

// Store is the directory of the pods' sources.
type Store struct {
	dir string
	key []byte
}

// record is one pod's file.
type record struct {
	Version int             `json:"version"`
	UID     string          `json:"uid"`
	Sources podspec.Sources `json:"sources"`
	// PodIPs are the pod's IPs from when its sandbox was ready: the
	// runtime forgets them once the sandbox stops, the status keeps them.
	PodIPs []string `json:"podIPs,omitempty"`
}

// Open opens the store in dir, making it (0700) and its key as needed. A
// key file that is not what the store writes is an error naming it: it is
// not replaced.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sources store %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sources store %s: %w", dir, err)
	}
	path := filepath.Join(dir, keyFile)
	key, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, keySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("sources store %s: new key: %w", dir, err)
		}
		err = store.WriteFileAtomic(path, key, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("sources store %s: key: %w", dir, err)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("sources store %s: key file %s holds %d bytes, want %d (move it away to make a new key)", dir, path, len(key), keySize)
	}
	return &Store{dir: dir, key: key}, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// uidPattern is what a pod uid must look like to name a file (as manifest
// validates it).
var uidPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func (s *Store) path(uid string) (string, error) {
	if !uidPattern.MatchString(uid) {
		return "", fmt.Errorf("sources of pod uid %q: not usable as a file name: %w", uid, errdefs.ErrInvalidArgument)
	}
	return filepath.Join(s.dir, uid+".json"), nil
}

// Save replaces the sources of a pod (its pod IPs stay). The sources are
// the pod's whole truth: an unreadable record is replaced.
func (s *Store) Save(uid string, sources podspec.Sources) error {
	return s.update(uid, true, func(r *record) { r.Sources = sources })
}

// SavePodIPs replaces the pod IPs kept for a pod (its sources stay). A
// record the store cannot read is left as it is and the error says why:
// it may hold the pod's sources.
func (s *Store) SavePodIPs(uid string, ips []string) error {
	return s.update(uid, false, func(r *record) { r.PodIPs = append([]string(nil), ips...) })
}

// update rewrites a pod's record with change applied; a missing record
// starts afresh, an unreadable one too when replaceUnreadable.
func (s *Store) update(uid string, replaceUnreadable bool, change func(*record)) error {
	path, err := s.path(uid)
	if err != nil {
		return err
	}
	r, err := s.load(uid)
	switch {
	case err == nil:
	case errors.Is(err, errdefs.ErrNotFound) || replaceUnreadable:
		r = record{}
	default:
		return fmt.Errorf("pod %s: its record is unreadable, left as it is: %w", uid, err)
	}
	r.Version, r.UID = recordVersion, uid
	change(&r)
	return store.SaveJSON(path, r)
}

// Load returns the sources of a pod; an error wrapping errdefs.ErrNotFound
// when the store has none.
func (s *Store) Load(uid string) (podspec.Sources, error) {
	r, err := s.load(uid)
	return r.Sources, err
}

// PodIPs returns the pod IPs kept for a pod (none: nil); an error wrapping
// errdefs.ErrNotFound when the store has no record of it.
func (s *Store) PodIPs(uid string) ([]string, error) {
	r, err := s.load(uid)
	return r.PodIPs, err
}

func (s *Store) load(uid string) (record, error) {
	path, err := s.path(uid)
	if err != nil {
		return record{}, err
	}
	var r record
	if err := store.LoadJSON(path, &r); err != nil {
		return record{}, err
	}
	if r.Version != recordVersion || r.UID != uid {
		return record{}, fmt.Errorf("record %s: version %d for uid %q, want version %d for %q", path, r.Version, r.UID, recordVersion, uid)
	}
	return r, nil
}

// Remove drops the sources of a deleted pod (none is not an error).
func (s *Store) Remove(uid string) error {
	path, err := s.path(uid)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sources of pod %s: %w", uid, err)
	}
	return nil
}

// RemoveExcept drops the records (and temporary files left by a crash)
// of every pod uid not in keep. Files the store does not write are left
// alone.
func (s *Store) RemoveExcept(keep map[string]bool) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("sources store %s: %w", s.dir, err)
	}
	var errs []error
	for _, e := range entries {
		uid, ok := recordUID(e.Name())
		if !ok || keep[uid] {
			continue
		}
		if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// recordUID is the pod uid of a record's file name (<uid>.json) or of a
// temporary file of one (.<uid>.json.tmp-*).
func recordUID(name string) (string, bool) {
	if rest, found := strings.CutPrefix(name, "."); found {
		name, _, found = strings.Cut(rest, ".json.tmp-")
		if !found {
			return "", false
		}
		return name, uidPattern.MatchString(name)
	}
	uid, found := strings.CutSuffix(name, ".json")
	return uid, found && uidPattern.MatchString(uid)
}

// Refs are the names and keyed digests of sources, for the sandbox.
func (s *Store) Refs(sources podspec.Sources) (podspec.SourceRefs, error) {
	var refs podspec.SourceRefs
	for i := range sources.ConfigMaps {
		d, err := s.Digest(&sources.ConfigMaps[i])
		if err != nil {
			return podspec.SourceRefs{}, fmt.Errorf("ConfigMap %s: %w", sources.ConfigMaps[i].Name, err)
		}
		refs.ConfigMaps = append(refs.ConfigMaps, podspec.SourceRef{Name: sources.ConfigMaps[i].Name, Digest: d})
	}
	for i := range sources.Secrets {
		d, err := s.Digest(&sources.Secrets[i])
		if err != nil {
			return podspec.SourceRefs{}, fmt.Errorf("Secret %s: %w", sources.Secrets[i].Name, err) //nolint:staticcheck // ST1005: "Secret" is the Kubernetes kind, as "ConfigMap" above
		}
		refs.Secrets = append(refs.Secrets, podspec.SourceRef{Name: sources.Secrets[i].Name, Digest: d})
	}
	return refs, nil
}

// Digest is the HMAC-SHA-256 of an object's JSON under the store's key
// ("hmac-sha256:<hex>"): the digests of the sandboxes' source refs, and
// the credential hashes of the image pull records (package pullrecords),
// which so tell nothing of a credential to whoever reads them.
func (s *Store) Digest(obj any) (string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, s.key)
	mac.Write(data)
	return "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil)), nil
}
