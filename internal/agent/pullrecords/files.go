package pullrecords

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/store"
)

// files are the records on disk: <dir>/intents/<name>.json, one per image
// being pulled (the pod's image, normalized), and <dir>/pulled/<name>.json,
// one per image id; <name> is "sha256-" and the hex SHA-256 of the image
// or the id. Directories 0700, files 0600, written atomically.
type files struct {
	intents, pulled string
}

// intent is the record of a pull under way (kubelet's ImagePullIntent).
type intent struct {
	Version int    `json:"version"`
	Image   string `json:"image"`
}

func openFiles(dir string) (files, error) {
	f := files{intents: filepath.Join(dir, "intents"), pulled: filepath.Join(dir, "pulled")}
	for _, d := range []string{dir, f.intents, f.pulled} {
		if err := store.MkdirPrivate(d); err != nil {
			return files{}, fmt.Errorf("image pull records: %w", err)
		}
		if err := removeTemporaries(d); err != nil {
			return files{}, fmt.Errorf("image pull records: %w", err)
		}
	}
	return f, nil
}

// removeTemporaries drops what an interrupted atomic write left behind.
func removeTemporaries(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".json.tmp-") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "sha256-" + hex.EncodeToString(sum[:]) + ".json"
}

func (f files) intentPath(image string) string { return filepath.Join(f.intents, fileName(image)) }
func (f files) pulledPath(ref string) string   { return filepath.Join(f.pulled, fileName(ref)) }

func (f files) writeIntent(image string) error {
	return store.SaveJSON(f.intentPath(image), intent{Version: recordVersion, Image: image})
}

// intentExists reports whether an intent file for image is there (an
// unreadable one counts: the agent meant to pull).
func (f files) intentExists(image string) (bool, error) {
	_, err := os.Stat(f.intentPath(image))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (f files) deleteIntent(image string) error {
	return removeDurably(f.intentPath(image))
}

// listIntents returns the images of the readable intents; the error names
// the others, which stay (they still say the agent meant to pull).
func (f files) listIntents() ([]string, error) {
	var images []string
	err := eachRecord(f.intents, func(path string) error {
		var in intent
		if err := store.LoadVersionedJSON(path, &in, recordVersion); err != nil {
			return err
		}
		if in.Image == "" || f.intentPath(in.Image) != path {
			return fmt.Errorf("record %s: image %q is not the one its name stands for", path, in.Image)
		}
		images = append(images, in.Image)
		return nil
	})
	return images, err
}

// readPulled returns the record of an image id; nil without error when
// there is none.
func (f files) readPulled(ref string) (*Pulled, error) {
	path := f.pulledPath(ref)
	var p Pulled
	err := store.LoadVersionedJSON(path, &p, recordVersion)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if p.ImageRef != ref {
		return nil, fmt.Errorf("record %s: image %q, want %q", path, p.ImageRef, ref)
	}
	return &p, nil
}

func (f files) writePulled(p *Pulled) error {
	p.Version = recordVersion
	return store.SaveJSON(f.pulledPath(p.ImageRef), p)
}

func (f files) deletePulled(ref string) error {
	return removeDurably(f.pulledPath(ref))
}

// listPulled returns the readable pulled records; the error names the
// others.
func (f files) listPulled() ([]*Pulled, error) {
	var out []*Pulled
	err := eachRecord(f.pulled, func(path string) error {
		var p Pulled
		if err := store.LoadVersionedJSON(path, &p, recordVersion); err != nil {
			return err
		}
		if p.ImageRef == "" || f.pulledPath(p.ImageRef) != path {
			return fmt.Errorf("record %s: image %q is not the one its name stands for", path, p.ImageRef)
		}
		out = append(out, &p)
		return nil
	})
	return out, err
}

// eachRecord calls fn with the path of each record file in dir, and joins
// its errors.
func eachRecord(dir string, fn func(path string) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("image pull records: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if err := fn(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeDurably removes a file (none is not an error) and syncs its
// directory.
func removeDurably(path string) error {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return store.SyncDir(filepath.Dir(path))
}
