package image

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Remove deletes the image ref names, with all its tags, then the blobs
// and unpacked layers no other image references. Unknown → ErrNotFound.
func (s *Store) Remove(ref string) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	recs, _, err := s.lockedRecords()
	if err != nil {
		return err
	}
	hex, err := resolveIn(recs, ref)
	if err != nil {
		return err
	}
	if err := s.deleteRecord(digestPrefix + hex); err != nil {
		return err
	}
	if err := s.bumpGeneration(); err != nil {
		return err
	}
	return s.gc()
}

// gc deletes blobs and layer dirs no record references. Layer dirs in use
// as a lowerdir of a live overlay mount are kept for a later pass. What a
// set-aside record names is kept; while a record's references cannot be
// known at all (not JSON, or unreadable), nothing is deleted: the store
// never destroys what it does not understand. The caller holds the lock.
func (s *Store) gc() error {
	recs, unread, err := s.lockedRecords()
	if err != nil {
		return err
	}
	blobs, layers := map[string]bool{}, map[string]bool{}
	quarantined := map[string]bool{}
	complete, err := s.quarantineKeeps(quarantined)
	if err != nil {
		return err
	}
	if !complete || unread > 0 {
		s.logger().Warn("image gc skipped: an image record that cannot be parsed may reference any blob or layer; see the quarantined records")
		return nil
	}
	for hex := range quarantined {
		blobs[hex], layers[hex] = true, true
	}
	for _, rec := range recs {
		markDigest(blobs, rec.Image.ID)
		for _, m := range rec.Manifests {
			markDigest(blobs, m)
		}
		for _, l := range rec.Image.Layers {
			markDigest(blobs, l.Digest)
			markDigest(layers, l.ChainID)
		}
	}
	if err := s.sweepBlobs(blobs); err != nil {
		return err
	}
	return s.sweepLayers(layers)
}

func markDigest(set map[string]bool, d string) {
	if hex, err := digestHex(d); err == nil {
		set[hex] = true
	}
}

func (s *Store) sweepBlobs(keep map[string]bool) error {
	entries, err := os.ReadDir(s.blobDir())
	if err != nil {
		return fmt.Errorf("image gc: blobs: %w", err)
	}
	for _, e := range entries {
		if keep[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(s.blobDir(), e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("image gc: blob %s: %w", e.Name(), err)
		}
	}
	return nil
}

func (s *Store) sweepLayers(keep map[string]bool) error {
	entries, err := os.ReadDir(s.layersDir())
	if err != nil {
		return fmt.Errorf("image gc: layers: %w", err)
	}
	var mounted map[string]bool
	for _, e := range entries {
		if keep[e.Name()] {
			continue
		}
		if mounted == nil {
			mounted = overlayLowerDirs()
		}
		p := filepath.Join(s.layersDir(), e.Name())
		if mounted[p] {
			continue
		}
		// Rename first so the dir vanishes at once, then delete at leisure.
		trash := filepath.Join(s.tmpDir(), "gc-"+e.Name())
		if err := os.Rename(p, trash); err != nil {
			return fmt.Errorf("image gc: layer %s: %w", e.Name(), err)
		}
		if err := removeTree(trash); err != nil {
			return fmt.Errorf("image gc: layer %s: %w", e.Name(), err)
		}
	}
	return nil
}

// overlayLowerDirs lists the lowerdirs of the overlay mounts this process sees.
func overlayLowerDirs() map[string]bool {
	dirs := map[string]bool{}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return dirs
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		_, post, ok := strings.Cut(sc.Text(), " - ")
		fields := strings.Fields(post)
		if !ok || len(fields) < 3 || fields[0] != "overlay" {
			continue
		}
		for _, opt := range strings.Split(fields[2], ",") {
			if v, ok := strings.CutPrefix(opt, "lowerdir="); ok {
				for _, d := range strings.Split(v, ":") {
					dirs[d] = true
				}
			}
		}
	}
	return dirs
}
