package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// Media types of the docker v2 schema 2 formats, which OCI layouts from
// docker and older tools still carry.
const (
	dockerManifestType     = "application/vnd.docker.distribution.manifest.v2+json"
	dockerManifestListType = "application/vnd.docker.distribution.manifest.list.v2+json"
	containerdNameKey      = "io.containerd.image.name"
	maxIndexDepth          = 4
)

// blobRef names one blob of the input: a known digest and size (OCI) or
// only a file whose digest is computed on read (docker archives).
type blobRef struct {
	path      string
	digest    string // "" when unknown
	size      int64  // -1 when unknown
	mediaType string
}

// candidate is one image found in the input, not yet verified.
type candidate struct {
	names      []string // raw names from annotations or RepoTags
	repoDigest string   // digest of the top-level descriptor; "" → synthesize a manifest
	manifests  []string // verified manifest/index digests to keep
	config     blobRef
	layers     []blobRef
}

// findCandidates reads an OCI layout or a `docker save` directory. When
// both are present (newer docker) the OCI index wins and docker RepoTags are
// added to the images with the same config.
func (st *staging) findCandidates(dir string) ([]candidate, error) {
	hasIndex := fileExists(filepath.Join(dir, "index.json"))
	hasDocker := fileExists(filepath.Join(dir, "manifest.json"))
	switch {
	case hasIndex:
		cands, err := st.readOCILayout(dir)
		if err != nil || !hasDocker {
			return cands, err
		}
		docker, err := readDockerManifest(dir)
		if err != nil {
			return nil, err
		}
		return mergeDockerTags(cands, docker), nil
	case hasDocker:
		return readDockerManifest(dir)
	}
	return nil, fmt.Errorf("import source: neither index.json (OCI layout) nor manifest.json (docker archive): %w", errdefs.ErrInvalidArgument)
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func (st *staging) readOCILayout(dir string) ([]candidate, error) {
	var index ocispec.Index
	if err := readJSONFile(filepath.Join(dir, "index.json"), &index); err != nil {
		return nil, fmt.Errorf("OCI layout: %w", err)
	}
	var out []candidate
	for _, desc := range index.Manifests {
		names := descriptorNames(desc)
		c, ok, err := st.resolveDescriptor(dir, desc, 0)
		if err != nil {
			return nil, fmt.Errorf("OCI layout: manifest %s: %w", desc.Digest, err)
		}
		if !ok {
			continue
		}
		c.names = names
		c.repoDigest = desc.Digest.String()
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("OCI layout: no image for %s/%s: %w", runtime.GOOS, runtime.GOARCH, errdefs.ErrNotFound)
	}
	return out, nil
}

// descriptorNames returns the image name of an index entry: the containerd
// annotation (a full name) or the OCI ref.name when it is more than a bare
// tag (a bare word such as "latest" names no repository and is ignored).
func descriptorNames(desc ocispec.Descriptor) []string {
	if n := desc.Annotations[containerdNameKey]; n != "" {
		return []string{n}
	}
	n := desc.Annotations[ocispec.AnnotationRefName]
	if n == "" {
		return nil
	}
	if _, err := parseRef(n); err != nil || !containsAny(n, "/:@") {
		return nil
	}
	return []string{n}
}

func containsAny(s, chars string) bool {
	for _, c := range chars {
		for _, r := range s {
			if r == c {
				return true
			}
		}
	}
	return false
}

// resolveDescriptor follows an index entry to one image manifest, choosing
// this machine's platform in (nested) indexes. ok is false for entries that
// are not images of this platform.
func (st *staging) resolveDescriptor(dir string, desc ocispec.Descriptor, depth int) (candidate, bool, error) {
	data, _, err := st.stageSmallBlob(ociBlobRef(dir, desc))
	if err != nil {
		return candidate{}, false, err
	}
	var probe struct {
		MediaType string `json:"mediaType"`
	}
	_ = json.Unmarshal(data, &probe)
	mt := desc.MediaType
	if mt == "" {
		mt = probe.MediaType
	}
	switch mt {
	case ocispec.MediaTypeImageManifest, dockerManifestType:
		var m ocispec.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return candidate{}, false, fmt.Errorf("manifest: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		c := candidate{manifests: []string{desc.Digest.String()}, config: ociBlobRef(dir, m.Config)}
		for _, l := range m.Layers {
			c.layers = append(c.layers, ociBlobRef(dir, l))
		}
		return c, true, nil
	case ocispec.MediaTypeImageIndex, dockerManifestListType:
		if depth >= maxIndexDepth {
			return candidate{}, false, fmt.Errorf("index: nested deeper than %d: %w", maxIndexDepth, errdefs.ErrInvalidArgument)
		}
		var idx ocispec.Index
		if err := json.Unmarshal(data, &idx); err != nil {
			return candidate{}, false, fmt.Errorf("index: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		for _, child := range idx.Manifests {
			if !platformMatches(child.Platform) {
				continue
			}
			c, ok, err := st.resolveDescriptor(dir, child, depth+1)
			if err != nil || ok {
				c.manifests = append([]string{desc.Digest.String()}, c.manifests...)
				return c, ok, err
			}
		}
		return candidate{}, false, nil
	}
	return candidate{}, false, nil // attestations and other artifacts
}

func platformMatches(p *ocispec.Platform) bool {
	return p == nil || (p.OS == runtime.GOOS && p.Architecture == runtime.GOARCH)
}

// ociBlobRef names the layout file of desc. Only sha256 digests are
// accepted; an invalid digest leaves path empty and fails when staged.
func ociBlobRef(dir string, desc ocispec.Descriptor) blobRef {
	ref := blobRef{digest: desc.Digest.String(), size: desc.Size, mediaType: desc.MediaType}
	if hex, err := digestHex(ref.digest); err == nil {
		ref.path = filepath.Join(dir, "blobs", "sha256", hex)
	}
	return ref
}

// dockerManifestEntry is one image of a `docker save` manifest.json.
type dockerManifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

func readDockerManifest(dir string) ([]candidate, error) {
	var entries []dockerManifestEntry
	if err := readJSONFile(filepath.Join(dir, "manifest.json"), &entries); err != nil {
		return nil, fmt.Errorf("docker archive: %w", err)
	}
	var out []candidate
	for i, e := range entries {
		cfg, err := dockerBlobRef(dir, e.Config)
		if err != nil {
			return nil, fmt.Errorf("docker archive: image %d: config: %w", i, err)
		}
		c := candidate{names: e.RepoTags, config: cfg}
		for _, l := range e.Layers {
			ref, err := dockerBlobRef(dir, l)
			if err != nil {
				return nil, fmt.Errorf("docker archive: image %d: layer: %w", i, err)
			}
			c.layers = append(c.layers, ref)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("docker archive: manifest.json lists no image: %w", errdefs.ErrInvalidArgument)
	}
	return out, nil
}

// dockerBlobRef names a file of a docker archive. Files named by their
// sha256 ("<hex>.json", "blobs/sha256/<hex>") are checked against it.
func dockerBlobRef(dir, name string) (blobRef, error) {
	p, err := sourcePath(dir, name)
	if err != nil {
		return blobRef{}, err
	}
	ref := blobRef{path: p, size: -1}
	base := filepath.Base(p)
	if hex := base[:len(base)-len(filepath.Ext(base))]; sha256Hex.MatchString(hex) {
		ref.digest = digestPrefix + hex
	}
	return ref, nil
}

// mergeDockerTags adds docker RepoTags to OCI candidates with the same config file.
func mergeDockerTags(cands, docker []candidate) []candidate {
	for _, d := range docker {
		for i := range cands {
			if d.config.digest != "" && d.config.digest == cands[i].config.digest {
				cands[i].names = append(cands[i].names, d.names...)
			}
		}
	}
	return cands
}

func readJSONFile(p string, v any) error {
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: %w", filepath.Base(p), errdefs.ErrInvalidArgument)
		}
		return fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	defer f.Close()
	data, err := readSmall(f)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v: %w", filepath.Base(p), err, errdefs.ErrInvalidArgument)
	}
	return nil
}
