package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// Layer is one layer of an image, bottom first in Image.Layers.
type Layer struct {
	Digest    string `json:"digest"`    // digest of the blob as stored (compressed or not)
	DiffID    string `json:"diffID"`    // digest of the uncompressed tar stream
	ChainID   string `json:"chainID"`   // identity of this layer stacked on its parents
	Size      int64  `json:"size"`      // bytes of the blob as stored
	MediaType string `json:"mediaType"` // OCI media type of the blob
}

// Image is one image in the store.
type Image struct {
	ID          string        `json:"id"`       // "sha256:<config digest hex>"
	RepoTags    []string      `json:"repoTags"` // normalized, "<domain>/library/busybox:latest"
	RepoDigests []string      `json:"repoDigests"`
	Size        int64         `json:"size"` // sum of the layer blobs' sizes as stored
	Config      ocispec.Image `json:"config"`
	Layers      []Layer       `json:"layers"` // bottom first
}

// record is the JSON stored per image in index/<id-hex>.json.
type record struct {
	Version   int      `json:"version,omitempty"` // recordVersion when written; 0 in records older than the field
	Image     Image    `json:"image"`
	Manifests []string `json:"manifests"` // manifest and index blobs kept for this image
}

// Store is the local image store rooted at one directory. It is safe for
// concurrent use by goroutines and by several processes.
type Store struct {
	root string

	mu         sync.Mutex
	cacheGen   string
	cache      map[string]record   // by id hex
	skipped    []QuarantinedRecord // bad records of the cached index, not yet set aside
	reported   map[string]string   // index path → reason of bad records already logged
	log        atomic.Pointer[slog.Logger]
	lim        atomic.Pointer[Limits]             // unpack limits; nil: DefaultLimits
	statfs     func(string, *unix.Statfs_t) error // nil: unix.Statfs (tests replace it)
	usageGen   string
	usageBytes uint64
	usageInos  uint64

	pull puller // registry pulls (pull*.go)
}

// Open opens (creating when missing) the store rooted at root.
func Open(root string) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("image store %q: %w", root, err)
	}
	s := &Store{root: abs}
	for _, dir := range []string{s.blobDir(), s.layersDir(), s.indexDir(), s.tmpDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("image store %q: %w", abs, err)
		}
	}
	f, err := os.OpenFile(s.lockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("image store %q: lock file: %w", abs, err)
	}
	f.Close()
	return s, nil
}

// Root returns the store's root directory.
func (s *Store) Root() string { return s.root }

func (s *Store) blobDir() string                  { return filepath.Join(s.root, "blobs", "sha256") }
func (s *Store) blobPath(hex string) string       { return filepath.Join(s.blobDir(), hex) }
func (s *Store) layersDir() string                { return filepath.Join(s.root, "layers") }
func (s *Store) layerPath(chainHex string) string { return filepath.Join(s.layersDir(), chainHex) }
func (s *Store) indexDir() string                 { return filepath.Join(s.root, "index") }
func (s *Store) tmpDir() string                   { return filepath.Join(s.root, "tmp") }
func (s *Store) lockPath() string                 { return filepath.Join(s.root, "lock") }
func (s *Store) generationPath() string           { return filepath.Join(s.root, "generation") }

// records returns the index, re-reading it when another writer (this or
// another process) bumped the generation since the last read. The map is
// shared: callers must not modify it.
func (s *Store) records() (map[string]record, error) {
	gen, err := s.readGeneration()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache != nil && gen == s.cacheGen {
		return s.cache, nil
	}
	recs, bad, err := s.readIndex()
	if err != nil {
		return nil, err
	}
	s.cache, s.cacheGen = recs, gen
	s.noteSkipped(bad)
	return recs, nil
}

// noteSkipped keeps the bad records a reader skipped for Quarantined and
// logs each one once. The caller holds s.mu.
func (s *Store) noteSkipped(bad []badRecord) {
	now := time.Now().UTC()
	s.skipped = s.skipped[:0]
	seen := map[string]string{}
	for _, b := range bad {
		p := filepath.Join(s.indexDir(), b.name)
		s.skipped = append(s.skipped, QuarantinedRecord{Path: p, Source: p, Reason: b.reason, Time: now})
		seen[p] = b.reason
		if s.reported[p] != b.reason {
			s.logger().Error("image record skipped: the store cannot read it; its image is not listed until the record is set aside by the next store write",
				"record", p, "reason", b.reason)
		}
	}
	s.reported = seen
}

// readIndex reads every record file in the index directory. A record that
// cannot be read or fails its checks is returned in bad instead; only a
// failure to read the directory itself fails the index.
func (s *Store) readIndex() (map[string]record, []badRecord, error) {
	entries, err := os.ReadDir(s.indexDir())
	if err != nil {
		return nil, nil, fmt.Errorf("image index: %w", err)
	}
	recs := make(map[string]record, len(entries))
	var bad []badRecord
	for _, e := range entries {
		hex, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !sha256Hex.MatchString(hex) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.indexDir(), e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // removed since ReadDir
		}
		if err != nil {
			bad = append(bad, badRecord{name: e.Name(), reason: "read: " + err.Error(), unread: true})
			continue
		}
		rec, err := parseRecord(hex, data)
		if err != nil {
			bad = append(bad, badRecord{name: e.Name(), reason: err.Error()})
			continue
		}
		recs[hex] = rec
	}
	return recs, bad, nil
}

// SetLogger sets where the store logs records it sets aside; the default
// is slog.Default().
func (s *Store) SetLogger(log *slog.Logger) { s.log.Store(log) }

func (s *Store) logger() *slog.Logger {
	if log := s.log.Load(); log != nil {
		return log
	}
	return slog.Default()
}

// List returns every image, ordered by id.
func (s *Store) List() ([]Image, error) {
	recs, err := s.records()
	if err != nil {
		return nil, err
	}
	out := make([]Image, 0, len(recs))
	for _, rec := range recs {
		img, err := cloneImage(rec.Image)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Resolve finds an image by full id ("sha256:<hex>" or bare hex), by name
// (short or normalized; a missing tag means "latest"), by name@sha256:<manifest
// digest>, or by a unique id prefix, in that order of precedence. An unknown
// reference is errdefs.ErrNotFound; an ambiguous id prefix or an unparsable
// reference is errdefs.ErrInvalidArgument.
func (s *Store) Resolve(ref string) (Image, error) {
	recs, err := s.records()
	if err != nil {
		return Image{}, err
	}
	hex, err := resolveIn(recs, ref)
	if err != nil {
		return Image{}, err
	}
	return cloneImage(recs[hex].Image)
}

// resolveIn returns the id hex of the record ref names.
func resolveIn(recs map[string]record, ref string) (string, error) {
	hex := strings.TrimPrefix(ref, digestPrefix)
	if _, ok := recs[hex]; ok && sha256Hex.MatchString(hex) {
		return hex, nil
	}
	p, parseErr := parseRef(ref)
	if parseErr == nil {
		if id, ok := findByName(recs, p); ok {
			return id, nil
		}
	}
	if hexPrefix.MatchString(hex) {
		var found []string
		for id := range recs {
			if strings.HasPrefix(id, hex) {
				found = append(found, id)
			}
		}
		switch len(found) {
		case 1:
			return found[0], nil
		case 0:
		default:
			return "", fmt.Errorf("image %q: id prefix matches %d images: %w", ref, len(found), errdefs.ErrInvalidArgument)
		}
	} else if parseErr != nil {
		return "", parseErr
	}
	return "", fmt.Errorf("image %q: %w", ref, errdefs.ErrNotFound)
}

func findByName(recs map[string]record, p parsedRef) (string, bool) {
	want := p.String()
	for id, rec := range recs {
		names := rec.Image.RepoTags
		if p.digest != "" {
			names = rec.Image.RepoDigests
		}
		for _, n := range names {
			if n == want {
				return id, true
			}
		}
	}
	return "", false
}

// LayerPaths returns the unpacked layer directories of img, bottom first.
// A missing directory (the image was removed meanwhile) is ErrNotFound.
func (s *Store) LayerPaths(img Image) ([]string, error) {
	paths := make([]string, 0, len(img.Layers))
	for _, l := range img.Layers {
		hex, err := digestHex(l.ChainID)
		if err != nil {
			return nil, fmt.Errorf("image %s: layer %s: %w", img.ID, l.Digest, err)
		}
		p := s.layerPath(hex)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("image %s: layer %s: unpacked dir: %w", img.ID, l.ChainID, errdefs.ErrNotFound)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// digestHex returns the hex of a "sha256:<hex>" digest.
func digestHex(d string) (string, error) {
	hex, ok := strings.CutPrefix(d, digestPrefix)
	if !ok || !sha256Hex.MatchString(hex) {
		return "", fmt.Errorf("digest %q: not sha256:<64 hex>: %w", d, errdefs.ErrInvalidArgument)
	}
	return hex, nil
}

// cloneImage deep-copies img so callers cannot change the cache.
func cloneImage(img Image) (Image, error) {
	data, err := json.Marshal(img)
	if err != nil {
		return Image{}, fmt.Errorf("image %s: copy: %w", img.ID, err)
	}
	var out Image
	if err := json.Unmarshal(data, &out); err != nil {
		return Image{}, fmt.Errorf("image %s: copy: %w", img.ID, err)
	}
	return out, nil
}
