package imagegc

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// detect lists the runtime's images and containers, updates the records
// (first seen now for a new image, last used now for one in use; records
// of images that are gone are dropped) and returns the images that may
// go, in eviction order: not in use by any container, not named by a pod,
// not pinned. Any failed list stops the round: nothing is removed on a
// partial view.
func (m *Manager) detect(ctx context.Context, now time.Time) ([]candidate, error) {
	images, err := m.cfg.Images.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("image gc: list images: %w", err)
	}
	keep, err := m.inUse(ctx)
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	var out []candidate
	for _, img := range images {
		id := img.GetId()
		if id == "" {
			continue
		}
		present[id] = true
		rec := m.records[id]
		if rec == nil {
			rec = &record{firstDetected: now}
			m.records[id] = rec
		}
		if used(img, keep) {
			rec.lastUsed = now
			continue
		}
		if img.GetPinned() {
			continue
		}
		out = append(out, candidate{id: id, tags: img.GetRepoTags(), size: int64(min(img.GetSize(), 1<<62)), record: *rec})
	}
	for id := range m.records {
		if !present[id] {
			delete(m.records, id)
		}
	}
	sortCandidates(out)
	return out, nil
}

// inUse is every image reference and id the runtime's containers use,
// whatever their state, and every image the agent's pods name (resolved
// to its id by the runtime).
func (m *Manager) inUse(ctx context.Context) (map[string]bool, error) {
	containers, err := m.cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("image gc: list containers: %w", err)
	}
	keep := map[string]bool{}
	for _, c := range containers {
		for _, ref := range []string{c.GetImageRef(), c.GetImageId(), c.GetImage().GetImage()} {
			if ref != "" {
				keep[ref] = true
			}
		}
	}
	if m.cfg.Needed == nil {
		return keep, nil
	}
	for _, ref := range m.cfg.Needed() {
		img, err := m.cfg.Images.ImageStatus(ctx, ref)
		if status.Code(err) == codes.InvalidArgument {
			continue // a reference the runtime cannot parse names no image
		}
		if err != nil {
			return nil, fmt.Errorf("image gc: status of image %s, which a pod names: %w", ref, err)
		}
		keep[ref] = true
		if img != nil {
			keep[img.GetId()] = true
		}
	}
	return keep, nil
}

// used reports whether an image's id, tags or digests are in keep.
func used(img *runtimeapi.Image, keep map[string]bool) bool {
	if keep[img.GetId()] {
		return true
	}
	for _, refs := range [][]string{img.GetRepoTags(), img.GetRepoDigests()} {
		for _, ref := range refs {
			if keep[ref] {
				return true
			}
		}
	}
	return false
}
