package image

import (
	"sort"
)

// Prune removes every image whose id ("sha256:<hex>") is not in inUse,
// then the blobs and unpacked layers no remaining image references, and
// the staging that interrupted pulls and imports left in tmp/ (dirs a live
// writer holds stay). It returns the removed ids, sorted.
func (s *Store) Prune(inUse map[string]bool) ([]string, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := s.clearTmp(); err != nil {
		return nil, err
	}
	recs, _, err := s.lockedRecords()
	if err != nil {
		return nil, err
	}
	var removed []string
	for hex, rec := range recs {
		if inUse[rec.Image.ID] || inUse[hex] {
			continue
		}
		if err := s.deleteRecord(rec.Image.ID); err != nil {
			return removed, err
		}
		removed = append(removed, rec.Image.ID)
	}
	sort.Strings(removed)
	if len(removed) > 0 {
		if err := s.bumpGeneration(); err != nil {
			return removed, err
		}
	}
	return removed, s.gc()
}
