package image

import (
	"errors"
	"fmt"
	"os"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/registry"
)

// commitPull stages the manifests and config, brings each layer's blob and
// unpacked dir into the pull's staging (unless the store has them), and
// commits under the store lock. Downloads never hold the lock.
func (s *Store) commitPull(res *registry.Resolved, rec record, layers []pulledLayer, budget *imageBudget) error {
	st, err := newStaging(s)
	if err != nil {
		return err
	}
	st.budget = budget
	defer st.cleanup()
	for _, m := range res.Manifests {
		if _, err := st.stageData(m.Raw); err != nil {
			return err
		}
	}
	if _, err := st.stageData(res.Config); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	// Staging of interrupted pulls and dead processes goes now; held dirs
	// (live pulls) stay. A failure leaves garbage, not a broken store: the
	// next writer tries again.
	_ = s.clearTmp()
	for _, l := range layers {
		if err := st.adoptLayer(l); err != nil {
			return fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	return s.commit(st, []record{rec})
}

// adoptLayer makes sure the layer is in the store or in st: the blob is
// hard-linked from the flight's staging, the unpacked dir moved from it
// (the first pull to ask takes it; a later one, for another chain,
// unpacks the blob again). The caller holds the store lock.
func (st *staging) adoptLayer(l pulledLayer) error {
	blobHex, _ := digestHex(l.Digest)
	chainHex, _ := digestHex(l.ChainID)
	if st.s.haveLayer(l.Layer) {
		return nil
	}
	if l.staged == nil {
		return fmt.Errorf("removed from the store during the pull; pull again: %w", errdefs.ErrUnavailable)
	}
	if _, ok := st.haveBlob(blobHex); !ok {
		if err := os.Link(l.staged.blobPath(), st.stagedBlob(blobHex)); err != nil {
			return fmt.Errorf("blob: stage: %w", err)
		}
		st.blobs[blobHex] = true
	}
	if st.haveLayer(chainHex) {
		return nil
	}
	dst := st.stagedLayer(chainHex)
	if l.staged.claim() {
		if err := os.Rename(l.staged.layerPath(), dst); err == nil {
			st.layers[chainHex] = true
			return nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("unpacked dir: stage: %w", err)
		}
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return fmt.Errorf("unpacked dir: stage: %w", err)
	}
	if err := unpackLayer(l.staged.blobPath(), dst, l.DiffID, st.layerUnpack(dst)); err != nil {
		return err
	}
	st.layers[chainHex] = true
	return nil
}
