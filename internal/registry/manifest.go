package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/berth-dev/berth/internal/errdefs"
)

// resolveManifest fetches the manifest ref names and, for an index, the
// manifest of the wanted platform.
func (r *Resolved) resolveManifest(ctx context.Context, ref name.Reference, opts Options) error {
	top, err := r.source.getManifest(ctx, ref.Identifier())
	if err != nil {
		return err
	}
	r.Digest = top.Digest
	r.Manifests = append(r.Manifests, top)
	img := top
	if isIndex(top.MediaType) {
		desc, err := pickPlatform(top, opts)
		if err != nil {
			return err
		}
		img, err = r.source.getManifest(ctx, desc.Digest.String())
		if err != nil {
			return fmt.Errorf("manifest %s: %w", desc.Digest, err)
		}
		if isIndex(img.MediaType) {
			return fmt.Errorf("manifest %s: nested index: %w", desc.Digest, errdefs.ErrInvalidArgument)
		}
		r.Manifests = append(r.Manifests, img)
	}
	if !isImageManifest(img.MediaType) {
		return fmt.Errorf("manifest %s: media type %q is not supported (schema 2 and OCI only): %w", img.Digest, img.MediaType, errdefs.ErrInvalidArgument)
	}
	m, err := v1.ParseManifest(bytes.NewReader(img.Raw))
	if err != nil {
		return fmt.Errorf("manifest %s: %v: %w", img.Digest, err, errdefs.ErrUnavailable)
	}
	r.Manifest = *m
	return nil
}

// getManifest fetches a manifest or index by tag or digest and verifies
// it against a digest.
func (s *source) getManifest(ctx context.Context, id string) (Manifest, error) {
	var at name.Reference = s.repo.Tag(id)
	if strings.HasPrefix(id, "sha256:") {
		at = s.repo.Digest(id)
	}
	desc, err := remote.Get(at, s.options(ctx)...)
	if err != nil {
		return Manifest{}, classify(err)
	}
	if len(desc.Manifest) > maxManifestSize {
		return Manifest{}, fmt.Errorf("manifest: larger than %d bytes: %w", maxManifestSize, errdefs.ErrUnavailable)
	}
	sum := sha256.Sum256(desc.Manifest)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if dig, ok := at.(name.Digest); ok && dig.DigestStr() != got {
		return Manifest{}, fmt.Errorf("manifest %s: content digest is %s: %w", dig.DigestStr(), got, errdefs.ErrUnavailable)
	}
	return Manifest{Digest: got, MediaType: string(desc.MediaType), Raw: desc.Manifest}, nil
}

func isIndex(mt string) bool {
	return mt == string(types.OCIImageIndex) || mt == string(types.DockerManifestList)
}

func isImageManifest(mt string) bool {
	return mt == string(types.OCIManifestSchema1) || mt == string(types.DockerManifestSchema2)
}

// pickPlatform chooses the index entry for opts' platform (default
// linux/GOARCH); an exact variant match is preferred.
func pickPlatform(idx Manifest, opts Options) (v1.Descriptor, error) {
	im, err := v1.ParseIndexManifest(bytes.NewReader(idx.Raw))
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("index %s: %v: %w", idx.Digest, err, errdefs.ErrUnavailable)
	}
	os, arch := opts.OS, opts.Arch
	if os == "" {
		os, arch = "linux", runtime.GOARCH
	}
	var found *v1.Descriptor
	var seen []string
	for i := range im.Manifests {
		d := &im.Manifests[i]
		if d.Platform == nil {
			continue
		}
		seen = append(seen, d.Platform.String())
		if d.Platform.OS != os || d.Platform.Architecture != arch {
			continue
		}
		if found == nil || (opts.Variant != "" && d.Platform.Variant == opts.Variant) {
			found = d
		}
	}
	if found == nil {
		return v1.Descriptor{}, fmt.Errorf("index %s: no manifest for %s/%s (index has %s): %w",
			idx.Digest, os, arch, listOrNone(seen), errdefs.ErrNotFound)
	}
	return *found, nil
}

func listOrNone(items []string) string {
	if len(items) == 0 {
		return "no platforms"
	}
	return strings.Join(items, ", ")
}

// verifyBytes checks a small blob against its descriptor.
func verifyBytes(data []byte, desc v1.Descriptor) error {
	if int64(len(data)) != desc.Size {
		return fmt.Errorf("blob %s: %d bytes, descriptor says %d: truncated or oversized: %w", desc.Digest, len(data), desc.Size, errdefs.ErrUnavailable)
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != desc.Digest.String() {
		return fmt.Errorf("blob %s: content digest is %s: digest mismatch: %w", desc.Digest, got, errdefs.ErrUnavailable)
	}
	return nil
}

// checkConfigPlatform refuses a single-platform image built for another
// platform: it could not run here.
func checkConfigPlatform(cfg []byte, opts Options) error {
	var p struct {
		OS   string `json:"os"`
		Arch string `json:"architecture"`
	}
	if err := json.Unmarshal(cfg, &p); err != nil {
		return fmt.Errorf("config: %v: %w", err, errdefs.ErrUnavailable)
	}
	os, arch := opts.OS, opts.Arch
	if os == "" {
		os, arch = "linux", runtime.GOARCH
	}
	if (p.OS != "" && p.OS != os) || (p.Arch != "" && p.Arch != arch) {
		return fmt.Errorf("image is for %s/%s only, not %s/%s: %w", p.OS, p.Arch, os, arch, errdefs.ErrNotFound)
	}
	return nil
}
