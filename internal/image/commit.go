package image

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/berth-dev/berth/internal/store"
)

// commit moves verified blobs and layers into place, then writes the
// records (tags moved off other images) and bumps the generation. The
// caller holds the lock. Anything moved but left without a record by a
// failure is garbage collected.
func (s *Store) commit(st *staging, recs []record) (err error) {
	if err := syncfs(st.dir); err != nil {
		return err
	}
	defer func() {
		if gcErr := s.gc(); err == nil && gcErr != nil {
			err = gcErr
		}
	}()
	for hex := range st.blobs {
		if err := moveIfAbsent(st.stagedBlob(hex), s.blobPath(hex)); err != nil {
			return fmt.Errorf("blob sha256:%s: %w", hex, err)
		}
	}
	for hex := range st.layers {
		if err := moveIfAbsent(st.stagedLayer(hex), s.layerPath(hex)); err != nil {
			return fmt.Errorf("layer sha256:%s: %w", hex, err)
		}
	}
	if err := store.SyncDir(s.blobDir()); err != nil {
		return err
	}
	if err := store.SyncDir(s.layersDir()); err != nil {
		return err
	}
	all, _, err := s.lockedRecords()
	if err != nil {
		return err
	}
	changed := map[string]bool{}
	for _, rec := range recs {
		hex, err := digestHex(rec.Image.ID)
		if err != nil {
			return err
		}
		all[hex] = mergeRecord(all, hex, rec)
		changed[hex] = true
		for _, tag := range rec.Image.RepoTags {
			for other := range all {
				if other != hex && untag(all, other, tag) {
					changed[other] = true
				}
			}
		}
	}
	for hex := range changed {
		if err := s.writeRecord(all[hex]); err != nil {
			return err
		}
	}
	return s.bumpGeneration()
}

// moveIfAbsent renames src to dst unless dst exists (same content by name).
func moveIfAbsent(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Rename(src, dst)
}

// mergeRecord unions a re-imported image's names into the existing record;
// the first import's layers stay (the new copies are collected).
func mergeRecord(all map[string]record, hex string, rec record) record {
	cur, ok := all[hex]
	if !ok {
		return rec
	}
	for _, t := range rec.Image.RepoTags {
		cur.Image.RepoTags = appendUnique(cur.Image.RepoTags, t)
	}
	for _, d := range rec.Image.RepoDigests {
		cur.Image.RepoDigests = appendUnique(cur.Image.RepoDigests, d)
	}
	for _, m := range rec.Manifests {
		cur.Manifests = appendUnique(cur.Manifests, m)
	}
	return cur
}

// untag removes tag from the record hex, and its repo digests when no tag
// of that repository is left on it. It reports whether anything changed.
func untag(all map[string]record, hex, tag string) bool {
	rec := all[hex]
	i := slices.Index(rec.Image.RepoTags, tag)
	if i < 0 {
		return false
	}
	rec.Image.RepoTags = slices.Delete(slices.Clone(rec.Image.RepoTags), i, i+1)
	p, err := parseRef(tag)
	if err == nil && !hasRepoTag(rec.Image.RepoTags, p.repo) {
		rec.Image.RepoDigests = slices.DeleteFunc(slices.Clone(rec.Image.RepoDigests), func(d string) bool {
			dp, err := parseRef(d)
			return err == nil && dp.repo == p.repo
		})
	}
	all[hex] = rec
	return true
}

func hasRepoTag(tags []string, repo string) bool {
	for _, t := range tags {
		if p, err := parseRef(t); err == nil && p.repo == repo {
			return true
		}
	}
	return false
}
