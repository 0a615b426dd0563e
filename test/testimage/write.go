package testimage

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// containerdNameKey is the annotation containerd uses for the full image name.
const containerdNameKey = "io.containerd.image.name"

// fileSet is an archive's files by path.
type fileSet map[string][]byte

func (fs fileSet) addBlob(data []byte) digest.Digest {
	d := digest.FromBytes(data)
	fs["blobs/sha256/"+d.Encoded()] = data
	return d
}

// ociLayout returns the files of an OCI image layout holding opts.
func ociLayout(opts []Options) (fileSet, error) {
	images, err := buildAll(opts)
	if err != nil {
		return nil, err
	}
	fs := fileSet{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`)}
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
	for _, b := range images {
		for _, l := range b.layers {
			fs.addBlob(l.gz)
		}
		fs.addBlob(b.config)
		desc := ocispec.Descriptor{
			MediaType: ocispec.MediaTypeImageManifest, Digest: fs.addBlob(b.manifest), Size: int64(len(b.manifest)),
		}
		if b.name != "" {
			desc.Annotations = map[string]string{ocispec.AnnotationRefName: b.name, containerdNameKey: b.name}
		}
		index.Manifests = append(index.Manifests, desc)
	}
	data, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	fs["index.json"] = data
	return fs, nil
}

// dockerArchive returns the files of a `docker save` archive holding opts:
// manifest.json, <config hex>.json and <diff id hex>/layer.tar (uncompressed).
func dockerArchive(opts []Options) (fileSet, error) {
	images, err := buildAll(opts)
	if err != nil {
		return nil, err
	}
	type entry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	fs := fileSet{}
	var manifest []entry
	for _, b := range images {
		e := entry{Config: hexOf(b.configID) + ".json", RepoTags: []string{}}
		fs[e.Config] = b.config
		if b.name != "" {
			e.RepoTags = append(e.RepoTags, b.name)
		}
		for _, l := range b.layers {
			p := hexOf(l.diffID) + "/layer.tar"
			fs[p] = l.tar
			e.Layers = append(e.Layers, p)
		}
		manifest = append(manifest, e)
	}
	data, err := json.Marshal(manifest)
	if err != nil {
		return nil, err
	}
	fs["manifest.json"] = data
	return fs, nil
}

// WriteLayout writes an OCI image layout directory at dir holding one image
// per Options, each tagged with its Name.
func WriteLayout(dir string, opts ...Options) error {
	fs, err := ociLayout(opts)
	if err != nil {
		return err
	}
	for p, data := range fs {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// WriteOCIArchive writes a tar of an OCI image layout to path.
func WriteOCIArchive(path string, opts ...Options) error {
	fs, err := ociLayout(opts)
	if err != nil {
		return err
	}
	return writeTar(path, fs)
}

// WriteDockerArchive writes a `docker save` archive to path.
func WriteDockerArchive(path string, opts ...Options) error {
	fs, err := dockerArchive(opts)
	if err != nil {
		return err
	}
	return writeTar(path, fs)
}

// writeTar writes fs as a tar with sorted, fixed-time entries.
func writeTar(path string, fs fileSet) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	names := make([]string, 0, len(fs))
	for n := range fs {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tar.NewWriter(f)
	dirs := map[string]bool{}
	for _, n := range names {
		var parents []string
		for d := filepath.Dir(n); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: Epoch}); err != nil {
				return err
			}
		}
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(fs[n])), ModTime: Epoch}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("testimage: %s: %w", n, err)
		}
		if _, err := tw.Write(fs[n]); err != nil {
			return fmt.Errorf("testimage: %s: %w", n, err)
		}
	}
	return tw.Close()
}
