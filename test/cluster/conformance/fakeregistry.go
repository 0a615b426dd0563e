package conformance

import (
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/berth-dev/berth/test/critest"
)

// fakeRegistryDir is where agnhost's fake-registry-server serves images
// from (the private-registry specs pull <name>:<tag> from it).
const fakeRegistryDir = "var/registry"

// fakeRegistryFiles lays img out as agnhost's fake-registry-server reads
// it: <dir>/<name>/manifests/<tag> holds the manifest digest, and the
// manifest and blobs are stored by digest at <algo>/<first two hex>/<hex>/data.
// Upstream's image downloads this content at build time; here it is built
// from an image of our own.
func fakeRegistryFiles(img v1.Image, name, tag string) ([]critest.File, error) {
	if img == nil {
		return nil, fmt.Errorf("fake registry %s:%s: no image", name, tag)
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return nil, fmt.Errorf("fake registry %s:%s: manifest: %w", name, tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("fake registry %s:%s: digest: %w", name, tag, err)
	}
	root := path.Join(fakeRegistryDir, name)
	files := []critest.File{
		{Name: path.Join(root, "manifests", tag), Mode: 0o644, Data: digest.String()},
		{Name: digestPath(path.Join(root, "manifests"), digest), Mode: 0o644, Data: string(manifest)},
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return nil, fmt.Errorf("fake registry %s:%s: config: %w", name, tag, err)
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("fake registry %s:%s: config digest: %w", name, tag, err)
	}
	files = append(files, critest.File{Name: digestPath(path.Join(root, "blobs"), configDigest), Mode: 0o644, Data: string(config)})
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("fake registry %s:%s: layers: %w", name, tag, err)
	}
	for _, l := range layers {
		f, err := layerBlobFile(path.Join(root, "blobs"), l)
		if err != nil {
			return nil, fmt.Errorf("fake registry %s:%s: %w", name, tag, err)
		}
		files = append(files, f)
	}
	return files, nil
}

func layerBlobFile(dir string, l v1.Layer) (critest.File, error) {
	d, err := l.Digest()
	if err != nil {
		return critest.File{}, fmt.Errorf("layer digest: %w", err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return critest.File{}, fmt.Errorf("layer %s: %w", d, err)
	}
	defer rc.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, rc); err != nil {
		return critest.File{}, fmt.Errorf("layer %s: %w", d, err)
	}
	return critest.File{Name: digestPath(dir, d), Mode: 0o644, Data: b.String()}, nil
}

// digestPath is the file fake-registry-server reads for digest under dir.
func digestPath(dir string, d v1.Hash) string {
	return path.Join(dir, d.Algorithm, d.Hex[:2], d.Hex, "data")
}
