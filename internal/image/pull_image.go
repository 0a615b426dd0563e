package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/registry"
)

// pulledLayer is one layer of a pull: in the store already, or staged by
// a layer flight that the pull holds until it committed.
type pulledLayer struct {
	Layer
	staged *stagedLayer // nil: already in the store
}

// pullImage resolves, fetches and commits one image; it runs once per
// flight, whatever the number of callers.
func (s *Store) pullImage(ctx context.Context, ref string, parsed name.Reference, opts PullOptions, hub *progressHub) (img Image, err error) {
	defer func() {
		if err != nil {
			hub.emit(PullProgress{Ref: ref, State: PullFailed})
		}
	}()
	cfg, client, slots := s.pullSettings()
	res, err := client.Resolve(ctx, parsed, s.registryOptions(opts))
	if err != nil {
		return Image{}, err
	}
	var ocicfg ocispec.Image
	if err := json.Unmarshal(res.Config, &ocicfg); err != nil {
		return Image{}, fmt.Errorf("image %q: config %s: %v: %w", ref, res.Manifest.Config.Digest, err, errdefs.ErrUnavailable)
	}
	planned, err := planLayers(res, ocicfg)
	if err != nil {
		return Image{}, fmt.Errorf("image %q: %w", ref, err)
	}
	var total int64
	for _, d := range res.Manifest.Layers {
		total += d.Size
	}
	hub.emit(PullProgress{Ref: ref, State: PullDownloading, Total: total})
	budget := newImageBudget(s.limits())
	job := layerJob{res: res, cfg: cfg, slots: slots, auth: authKey(opts), budget: budget}
	layers, release, err := s.pullLayers(ctx, ref, planned, job, hub)
	defer release()
	if err != nil {
		return Image{}, fmt.Errorf("image %q: %w", ref, err)
	}
	rec := pulledRecord(ref, parsed, res, ocicfg, layers)
	if err := s.commitPull(res, rec, layers, budget); err != nil {
		return Image{}, fmt.Errorf("image %q: commit: %w", ref, err)
	}
	hub.emit(PullProgress{Ref: ref, State: PullDone, Done: total, Total: total})
	return s.Resolve(rec.Image.ID)
}

// maxLayers bounds the layers of a pulled image (overlayfs stacks far
// fewer; each layer costs a flight, a goroutine and a staging dir).
const maxLayers = 128

// planLayers checks the manifest's layers against the config and computes
// their chain ids, before any download starts.
func planLayers(res *registry.Resolved, cfg ocispec.Image) ([]pulledLayer, error) {
	descs := res.Manifest.Layers
	if len(descs) > maxLayers {
		return nil, fmt.Errorf("manifest %s: %d layers, at most %d are supported: %w", res.Digest, len(descs), maxLayers, errdefs.ErrInvalidArgument)
	}
	if len(cfg.RootFS.DiffIDs) != len(descs) {
		return nil, fmt.Errorf("config %s: %d diff ids for %d layers: %w", res.Manifest.Config.Digest, len(cfg.RootFS.DiffIDs), len(descs), errdefs.ErrUnavailable)
	}
	out := make([]pulledLayer, len(descs))
	chain := ""
	for i, desc := range descs {
		diffID := cfg.RootFS.DiffIDs[i].String()
		if _, err := digestHex(diffID); err != nil {
			return nil, fmt.Errorf("config %s: diff id %d: %v: %w", res.Manifest.Config.Digest, i, err, errdefs.ErrUnavailable)
		}
		if _, err := digestHex(desc.Digest.String()); err != nil {
			return nil, fmt.Errorf("manifest %s: layer %d: %v: %w", res.Digest, i, err, errdefs.ErrUnavailable)
		}
		chain = chainID(chain, diffID)
		out[i].Layer = Layer{Digest: desc.Digest.String(), DiffID: diffID, ChainID: chain, Size: desc.Size, MediaType: string(desc.MediaType)}
	}
	return out, nil
}

// pullLayers gets every planned layer in parallel: present ones are
// reported as such, the others joined to (or started as) layer flights.
// release leaves the flights; call it after the commit.
func (s *Store) pullLayers(ctx context.Context, ref string, planned []pulledLayer, job layerJob, hub *progressHub) ([]pulledLayer, func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := planned
	errs := make(chan error, len(out))
	var leaves []func()
	for i := range out {
		if s.haveLayer(out[i].Layer) {
			hub.emit(PullProgress{Ref: ref, Layer: out[i].Digest, State: PullExists, Done: out[i].Size, Total: out[i].Size})
			errs <- nil
			continue
		}
		f, leave := s.joinLayer(ref, job.res.Manifest.Layers[i], job, hub)
		leaves = append(leaves, leave)
		go func(i int) {
			errs <- s.awaitLayer(ctx, ref, f, &out[i], job.budget, hub)
		}(i)
	}
	release := func() {
		for _, leave := range leaves {
			leave()
		}
	}
	var first error
	for range out {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return out, release, first
}

// joinLayer joins the flight of one layer blob and forwards its progress.
// Pulls share a layer flight only when they use the same credentials.
func (s *Store) joinLayer(ref string, desc v1.Descriptor, job layerJob, hub *progressHub) (*flight[*stagedLayer], func()) {
	key := job.auth + "\x00" + desc.Digest.String()
	job.desc = desc
	f := s.pull.layers.join(key, func(ctx context.Context, f *flight[*stagedLayer]) (*stagedLayer, error) {
		job.hub = &f.hub
		return s.fetchLayer(ctx, job)
	}, func(l *stagedLayer) { l.st.cleanup() })
	unsubscribe := f.hub.subscribe(func(p PullProgress) {
		p.Ref = ref
		hub.emit(p)
	})
	return f, func() {
		unsubscribe()
		s.pull.layers.leave(key, f)
	}
}

// awaitLayer waits for a layer flight and checks its diff id against the
// config of this image. A flight another pull started charged that pull's
// image budget as it unpacked; its bytes count against this one's now.
func (s *Store) awaitLayer(ctx context.Context, ref string, f *flight[*stagedLayer], l *pulledLayer, budget *imageBudget, hub *progressHub) error {
	staged, err := f.wait(ctx)
	if err == nil && staged.budget != budget {
		if err = budget.charge(staged.unpacked); err != nil {
			err = fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	if err != nil {
		hub.emit(PullProgress{Ref: ref, Layer: l.Digest, State: PullFailed, Total: l.Size})
		return err
	}
	if staged.diffID != l.DiffID {
		hub.emit(PullProgress{Ref: ref, Layer: l.Digest, State: PullFailed, Total: l.Size})
		return fmt.Errorf("layer %s: diff id is %s, config says %s: %w", l.Digest, staged.diffID, l.DiffID, errdefs.ErrUnavailable)
	}
	l.staged = staged
	hub.emit(PullProgress{Ref: ref, Layer: l.Digest, State: PullDone, Done: l.Size, Total: l.Size})
	return nil
}

// haveLayer reports whether the store holds the layer's blob and its
// unpacked dir for this chain.
func (s *Store) haveLayer(l Layer) bool {
	blobHex, err1 := digestHex(l.Digest)
	chainHex, err2 := digestHex(l.ChainID)
	if err1 != nil || err2 != nil || !fileExists(s.blobPath(blobHex)) {
		return false
	}
	fi, err := os.Lstat(s.layerPath(chainHex))
	return err == nil && fi.IsDir()
}

func chainID(parent, diffID string) string {
	if parent == "" {
		return diffID
	}
	sum := sha256.Sum256([]byte(parent + " " + diffID))
	return digestPrefix + hex.EncodeToString(sum[:])
}

// pulledRecord builds the index record: a tag reference tags the image,
// and the digest of what the reference named is its repo digest.
func pulledRecord(ref string, parsed name.Reference, res *registry.Resolved, cfg ocispec.Image, layers []pulledLayer) record {
	img := Image{ID: res.Manifest.Config.Digest.String(), Config: cfg}
	for _, l := range layers {
		img.Layers = append(img.Layers, l.Layer)
		img.Size += l.Size
	}
	if _, isTag := parsed.(name.Tag); isTag {
		img.RepoTags = []string{ref}
	}
	img.RepoDigests = []string{repoDigest(ref, res.Digest)}
	rec := record{Image: img}
	for _, m := range res.Manifests {
		rec.Manifests = append(rec.Manifests, m.Digest)
	}
	return rec
}
