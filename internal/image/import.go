package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// Import adds the images in path: an OCI image layout directory, an OCI
// archive (a tar of a layout) or a `docker save` archive, auto-detected.
// Everything is verified in private staging before anything is committed;
// on failure the store is unchanged. Re-importing is idempotent; a tag that
// now names another image is removed from the old one.
func (s *Store) Import(ctx context.Context, path string) ([]Image, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := s.clearTmp(); err != nil {
		return nil, err
	}
	st, err := newStaging(s)
	if err != nil {
		return nil, err
	}
	defer st.cleanup()
	dir, err := sourceDir(path, st.dir)
	if err != nil {
		return nil, err
	}
	cands, err := st.findCandidates(dir)
	if err != nil {
		return nil, fmt.Errorf("import %q: %w", path, err)
	}
	var recs []record
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("import %q: %w", path, err)
		}
		rec, err := st.processCandidate(c)
		if err != nil {
			return nil, fmt.Errorf("import %q: %w", path, err)
		}
		recs = append(recs, rec)
	}
	if err := s.commit(st, recs); err != nil {
		return nil, fmt.Errorf("import %q: commit: %w", path, err)
	}
	out := make([]Image, 0, len(recs))
	for _, r := range recs {
		img, err := s.Resolve(r.Image.ID)
		if err != nil {
			return nil, fmt.Errorf("import %q: %w", path, err)
		}
		out = append(out, img)
	}
	return out, nil
}

// staleAfter is how old an unheld entry of tmp/ must be before clearTmp
// removes it: a staging dir is created a moment before it is held.
const staleAfter = time.Minute

// clearTmp removes staging left by writers that died. Pulls stage under
// tmp/ without the store lock, each holding a flock on its own dir: held
// and fresh entries are left alone. The caller holds the store lock.
func (s *Store) clearTmp() error {
	entries, err := os.ReadDir(s.tmpDir())
	if err != nil {
		return fmt.Errorf("image store tmp: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(s.tmpDir(), e.Name())
		fi, err := os.Lstat(p)
		if err != nil || time.Since(fi.ModTime()) < staleAfter {
			continue
		}
		held, err := holdDir(p)
		if err != nil && fi.IsDir() {
			continue // in use by a live pull or import
		}
		err = removeTree(p)
		if held != nil {
			held.Close()
		}
		if err != nil {
			return fmt.Errorf("image store tmp: %w", err)
		}
	}
	return nil
}

// processCandidate verifies one image and stages its blobs and layers.
func (st *staging) processCandidate(c candidate) (record, error) {
	cfgData, cfgDigest, err := st.stageSmallBlob(c.config)
	if err != nil {
		return record{}, fmt.Errorf("config: %w", err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		return record{}, fmt.Errorf("config %s: %v: %w", cfgDigest, err, errdefs.ErrInvalidArgument)
	}
	if len(cfg.RootFS.DiffIDs) != len(c.layers) {
		return record{}, fmt.Errorf("config %s: %d diff ids for %d layers: %w", cfgDigest, len(cfg.RootFS.DiffIDs), len(c.layers), errdefs.ErrInvalidArgument)
	}
	img := Image{ID: cfgDigest, Config: cfg}
	st.budget = newImageBudget(st.lim)
	chain := ""
	for i, ref := range c.layers {
		l, err := st.processLayer(ref, cfg.RootFS.DiffIDs[i].String(), chain)
		if err != nil {
			return record{}, fmt.Errorf("image %s: layer %d: %w", candidateName(c, cfgDigest), i, err)
		}
		chain = l.ChainID
		img.Layers = append(img.Layers, l)
		img.Size += l.Size
	}
	rec := record{Image: img, Manifests: c.manifests}
	repoDig := c.repoDigest
	if repoDig == "" {
		if repoDig, err = st.synthesizeManifest(img, len(cfgData)); err != nil {
			return record{}, err
		}
		rec.Manifests = []string{repoDig}
	}
	for _, n := range c.names {
		tag, err := NormalizeRef(n)
		if err != nil {
			return record{}, fmt.Errorf("image name: %w", err)
		}
		rec.Image.RepoTags = appendUnique(rec.Image.RepoTags, tag)
		if rd := repoDigest(tag, repoDig); rd != "" {
			rec.Image.RepoDigests = appendUnique(rec.Image.RepoDigests, rd)
		}
	}
	return rec, nil
}

func (st *staging) processLayer(ref blobRef, diffID, parentChain string) (Layer, error) {
	if _, err := digestHex(diffID); err != nil {
		return Layer{}, fmt.Errorf("diff id: %w", err)
	}
	chainID := diffID
	if parentChain != "" {
		sum := sha256.Sum256([]byte(parentChain + " " + diffID))
		chainID = digestPrefix + hex.EncodeToString(sum[:])
	}
	chainHex, _ := digestHex(chainID)
	path, digest, size, fresh, err := st.stageBlob(ref)
	if err != nil {
		return Layer{}, err
	}
	l := Layer{Digest: digest, DiffID: diffID, ChainID: chainID, Size: size, MediaType: ref.mediaType}
	if l.MediaType == "" {
		if l.MediaType, err = sniffLayerType(path); err != nil {
			return Layer{}, err
		}
	}
	if st.haveLayer(chainHex) {
		if fresh {
			err = verifyDiffID(path, diffID, st.layerUnpack(""))
		}
		return l, err
	}
	dst := st.stagedLayer(chainHex)
	if err := os.Mkdir(dst, 0o755); err != nil {
		return Layer{}, fmt.Errorf("layer %s: staging: %w", chainID, err)
	}
	if err := unpackLayer(path, dst, diffID, st.layerUnpack(dst)); err != nil {
		return Layer{}, fmt.Errorf("layer %s: %w", digest, err)
	}
	st.layers[chainHex] = true
	return l, nil
}

// candidateName names an image being imported in errors: its first name,
// else its id.
func candidateName(c candidate, id string) string {
	if len(c.names) > 0 {
		return fmt.Sprintf("%q (%s)", c.names[0], id)
	}
	return id
}

// sniffLayerType names the media type of a layer blob from its magic.
func sniffLayerType(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("layer blob: %w", err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	n, _ := f.Read(magic)
	switch {
	case n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		return ocispec.MediaTypeImageLayerGzip, nil
	case n == 4 && string(magic) == "\x28\xb5\x2f\xfd":
		return ocispec.MediaTypeImageLayerZstd, nil
	}
	return ocispec.MediaTypeImageLayer, nil
}

// synthesizeManifest writes an OCI manifest for an image that came without
// one (docker archives), so it has a digest like any other.
func (st *staging) synthesizeManifest(img Image, configSize int) (string, error) {
	m := ocispec.Manifest{
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: toDigest(img.ID), Size: int64(configSize)},
	}
	m.SchemaVersion = 2
	for _, l := range img.Layers {
		m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: l.MediaType, Digest: toDigest(l.Digest), Size: l.Size})
	}
	data, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("manifest of %s: %w", img.ID, err)
	}
	return st.stageData(data)
}

func toDigest(d string) digest.Digest { return digest.Digest(d) }

func appendUnique(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

func syncfs(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
