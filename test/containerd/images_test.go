package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/testimage"
)

// busyboxRef is the name pods' "busybox" normalizes to.
const busyboxRef = "docker.io/library/busybox:latest"

// imageEpoch is the fixed time of the pause image's files and config.
var imageEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// blobSet holds an image's blobs by digest.
type blobSet map[digest.Digest][]byte

// add stores data and returns its descriptor.
func (b blobSet) add(mediaType string, data []byte) ocispec.Descriptor {
	d := digest.FromBytes(data)
	b[d] = data
	return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
}

// writePauseArchive writes an OCI archive (a tar of an image layout) of a
// one-layer image named ref whose only file, /pause, is the static
// berth-pause binary, and whose entrypoint runs it.
func writePauseArchive(path, ref, pauseBinary string) error {
	bin, err := os.ReadFile(pauseBinary)
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	layer, err := tarOf(map[string]tarFile{"pause": {mode: 0o755, data: bin}})
	if err != nil {
		return err
	}
	config, err := json.Marshal(ocispec.Image{
		Created:  &imageEpoch,
		Platform: ocispec.Platform{Architecture: runtime.GOARCH, OS: "linux"},
		Config:   ocispec.ImageConfig{Entrypoint: []string{"/pause"}},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromBytes(layer)}},
	})
	if err != nil {
		return err
	}
	blobs := blobSet{}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: blobs.add(ocispec.MediaTypeImageConfig, config),
		Layers: []ocispec.Descriptor{blobs.add(ocispec.MediaTypeImageLayer, layer)},
	})
	if err != nil {
		return err
	}
	return writeLayoutArchive(path, ref, blobs.add(ocispec.MediaTypeImageManifest, manifest), blobs)
}

// writeLayoutArchive writes the archive of an image layout: oci-layout,
// index.json naming the manifest ref (for containerd and for OCI tools)
// and the blobs.
func writeLayoutArchive(path, ref string, manifest ocispec.Descriptor, blobs blobSet) error {
	manifest.Annotations = map[string]string{ocispec.AnnotationRefName: ref, "io.containerd.image.name": ref}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manifest},
	})
	if err != nil {
		return err
	}
	files := map[string]tarFile{
		"oci-layout": {mode: 0o644, data: []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		"index.json": {mode: 0o644, data: index},
	}
	for d, data := range blobs {
		files["blobs/sha256/"+d.Encoded()] = tarFile{mode: 0o644, data: data}
	}
	archive, err := tarOf(files)
	if err != nil {
		return err
	}
	return os.WriteFile(path, archive, 0o644)
}

// tarFile is one regular file of a tar built by tarOf.
type tarFile struct {
	mode int64
	data []byte
}

// tarOf returns a tar of files (sorted by name, parent directories
// first, fixed times and owner root).
func tarOf(files map[string]tarFile) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, n := range names {
		for _, d := range parentDirs(n) {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: imageEpoch}); err != nil {
				return nil, err
			}
		}
		f := files[n]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: f.mode, Size: int64(len(f.data)), ModTime: imageEpoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parentDirs lists the directories above a relative path, outermost first.
func parentDirs(name string) []string {
	var out []string
	for d := filepath.Dir(name); d != "." && d != "/"; d = filepath.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}

// importImages builds the pause and busybox images into dir, imports them
// into the CRI namespace of containerd with ctr, and checks that the CRI
// plugin lists both.
func (c *containerd) importImages(dir, pauseBinary string) error {
	pause := filepath.Join(dir, "pause-oci.tar")
	if err := writePauseArchive(pause, pauseRef, pauseBinary); err != nil {
		return err
	}
	busybox := filepath.Join(dir, "busybox-docker.tar")
	if err := testimage.WriteDockerArchive(busybox, testimage.Options{Name: busyboxRef}); err != nil {
		return fmt.Errorf("busybox image: %w", err)
	}
	for _, archive := range []string{pause, busybox} {
		out, err := exec.Command(ctrBin, "-a", c.socket, "-n", criNamespace, "images", "import", archive).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr images import %s: %v\n%s", archive, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ref := range []string{pauseRef, busyboxRef} {
		resp, err := c.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil || resp.GetImage() == nil {
			return fmt.Errorf("the CRI plugin does not list %s after the import (error %v)", ref, err)
		}
	}
	return nil
}
