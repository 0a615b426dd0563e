package registry

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/berth-dev/berth/test/testimage"
)

// MultiArch is a pushed image index.
type MultiArch struct {
	Ref         string // "<host>/<repo>:<tag>"
	IndexDigest string
	Host        Pushed // the linux/<GOARCH> image: a pull on this host must pick it
	Other       Pushed // the fake image of another architecture (it does not run here)
	OtherArch   string
}

// OtherArch is an architecture that is not this host's.
func OtherArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

// PushMultiArch pushes an OCI image index as <host>/<repoTag> with two
// linux images: a fake one for OtherArch (listed first, so a client that
// takes the first entry is caught) with an extra layer holding /arch, and
// the busybox test image for this host's architecture.
func (r *Registry) PushMultiArch(repoTag string, opts testimage.Options) (MultiArch, error) {
	hostImg, cleanup, err := layoutImage(opts)
	if err != nil {
		return MultiArch{}, err
	}
	defer cleanup()
	other, err := fakeArch(hostImg, OtherArch())
	if err != nil {
		return MultiArch{}, err
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: OtherArch()}}},
		mutate.IndexAddendum{Add: hostImg, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}},
	)
	ref, err := r.reference(repoTag)
	if err != nil {
		return MultiArch{}, err
	}
	ropts, err := r.remoteOptions()
	if err != nil {
		return MultiArch{}, err
	}
	if err := remote.WriteIndex(ref, idx, ropts...); err != nil {
		return MultiArch{}, fmt.Errorf("push index %s: %w", ref, err)
	}
	return describeIndex(ref.String(), idx, hostImg, other)
}

func describeIndex(ref string, idx v1.ImageIndex, hostImg, other v1.Image) (MultiArch, error) {
	d, err := idx.Digest()
	if err != nil {
		return MultiArch{}, fmt.Errorf("index digest: %w", err)
	}
	m := MultiArch{Ref: ref, IndexDigest: d.String(), OtherArch: OtherArch()}
	if m.Host, err = describe(hostImg); err != nil {
		return MultiArch{}, err
	}
	if m.Other, err = describe(other); err != nil {
		return MultiArch{}, err
	}
	m.Host.Ref, m.Other.Ref = ref, ref
	return m, nil
}

// fakeArch is base with its config's architecture set to arch and one more
// layer holding /arch, so its id and layers differ from base's.
func fakeArch(base v1.Image, arch string) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	content := []byte(arch + "\n")
	hdr := &tar.Header{Name: "arch", Mode: 0o644, Size: int64(len(content)), ModTime: testimage.Epoch, Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("fake %s layer: %w", arch, err)
	}
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("fake %s image: %w", arch, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("fake %s config: %w", arch, err)
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture = arch
	return mutate.ConfigFile(img, cfg)
}
