package registry

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/berth-dev/berth/test/testimage"
)

// Pushed describes an image pushed to the registry.
type Pushed struct {
	Ref    string   // "<host>/<repo>:<tag>"
	Digest string   // digest of what the tag points at (a manifest or an index)
	ID     string   // the image id a linux/<GOARCH> pull must return: its config digest
	Config string   // config blob digest (= ID)
	Layers []string // layer blob digests of that image, in order
}

// Blobs are the config and layer digests of the image.
func (p Pushed) Blobs() []string { return append([]string{p.Config}, p.Layers...) }

// ByDigest is the reference "<host>/<repo>@<digest>".
func (p Pushed) ByDigest() (string, error) {
	ref, err := name.ParseReference(p.Ref)
	if err != nil {
		return "", err
	}
	return ref.Context().Name() + "@" + p.Digest, nil
}

// PushImage pushes a busybox test image with OCI media types as
// <host>/<repoTag>.
func (r *Registry) PushImage(repoTag string, opts testimage.Options) (Pushed, error) {
	img, cleanup, err := layoutImage(opts)
	if err != nil {
		return Pushed{}, err
	}
	defer cleanup()
	return r.Push(repoTag, img)
}

// PushDockerImage pushes a busybox test image with Docker schema 2 media
// types (manifest, config and gzip layers) as <host>/<repoTag>.
func (r *Registry) PushDockerImage(repoTag string, opts testimage.Options) (Pushed, error) {
	dir, err := os.MkdirTemp("", "berth-registry-docker-")
	if err != nil {
		return Pushed{}, err
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "image.tar")
	if err := testimage.WriteDockerArchive(archive, opts); err != nil {
		return Pushed{}, err
	}
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		return Pushed{}, fmt.Errorf("docker archive: %w", err)
	}
	return r.Push(repoTag, img)
}

// PushSharingLayers pushes two images built from the same base layers
// (testimage Layers: 4); the second adds one layer of its own. It returns
// both and the digests of the layers they share.
func (r *Registry) PushSharingLayers(repoTagA, repoTagB string) (a, b Pushed, shared []string, err error) {
	if a, err = r.PushImage(repoTagA, testimage.Options{Layers: 4, Cmd: []string{"sh"}}); err != nil {
		return a, b, nil, err
	}
	extra := map[string]string{"/etc/second-image": "shares its base layers with " + repoTagA + "\n"}
	if b, err = r.PushImage(repoTagB, testimage.Options{Layers: 4, Cmd: []string{"sh"}, ExtraFiles: extra}); err != nil {
		return a, b, nil, err
	}
	inB := map[string]bool{}
	for _, l := range b.Layers {
		inB[l] = true
	}
	for _, l := range a.Layers {
		if inB[l] {
			shared = append(shared, l)
		}
	}
	if len(shared) == 0 {
		return a, b, nil, fmt.Errorf("images %s and %s share no layer", repoTagA, repoTagB)
	}
	return a, b, shared, nil
}

// Push writes img to <host>/<repoTag>.
func (r *Registry) Push(repoTag string, img v1.Image) (Pushed, error) {
	ref, err := r.reference(repoTag)
	if err != nil {
		return Pushed{}, err
	}
	opts, err := r.remoteOptions()
	if err != nil {
		return Pushed{}, err
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		return Pushed{}, fmt.Errorf("push %s: %w", ref, err)
	}
	p, err := describe(img)
	if err != nil {
		return Pushed{}, err
	}
	p.Ref = ref.String()
	return p, nil
}

// describe fills everything of Pushed but Ref from an image.
func describe(img v1.Image) (Pushed, error) {
	d, err := img.Digest()
	if err != nil {
		return Pushed{}, fmt.Errorf("image digest: %w", err)
	}
	m, err := img.Manifest()
	if err != nil {
		return Pushed{}, fmt.Errorf("image manifest: %w", err)
	}
	p := Pushed{Digest: d.String(), ID: m.Config.Digest.String(), Config: m.Config.Digest.String()}
	for _, l := range m.Layers {
		p.Layers = append(p.Layers, l.Digest.String())
	}
	return p, nil
}

// reference parses "<host>/<repoTag>".
func (r *Registry) reference(repoTag string) (name.Reference, error) {
	ref, err := name.ParseReference(r.Host+"/"+repoTag, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("reference %q: %w", repoTag, err)
	}
	return ref, nil
}

// remoteOptions are the go-containerregistry options for this registry:
// its credentials and a transport that trusts its CA.
func (r *Registry) remoteOptions() ([]remote.Option, error) {
	client, err := r.HTTPClient()
	if err != nil {
		return nil, err
	}
	tr := client.Transport
	if r.CAFile != "" {
		tr = httpsOnly{host: r.Host, next: tr}
	}
	opts := []remote.Option{remote.WithTransport(tr), remote.WithJobs(4)}
	if r.Username != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.Username, Password: r.Password}))
	}
	return opts, nil
}

// httpsOnly sends every request for host over HTTPS: go-containerregistry
// picks plain HTTP for loopback registries, and the TLS variant has none.
type httpsOnly struct {
	host string
	next http.RoundTripper
}

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == h.host && req.URL.Scheme == "http" {
		req = req.Clone(req.Context())
		req.URL.Scheme = "https"
	}
	return h.next.RoundTrip(req)
}

// layoutImage builds a testimage as an OCI layout in a temp dir and opens
// it; cleanup removes the dir once the image has been pushed.
func layoutImage(opts testimage.Options) (v1.Image, func(), error) {
	dir, err := os.MkdirTemp("", "berth-registry-layout-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	img, err := openLayout(dir, func() error { return testimage.WriteLayout(dir, opts) })
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return img, cleanup, nil
}

// openLayout runs write, which fills an OCI layout at dir, then opens the
// layout's first image.
func openLayout(dir string, write func() error) (v1.Image, error) {
	if err := write(); err != nil {
		return nil, fmt.Errorf("image layout %s: %w", dir, err)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", dir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", dir, err)
	}
	if len(im.Manifests) == 0 {
		return nil, fmt.Errorf("image layout %s: no manifest", dir)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", dir, err)
	}
	return img, nil
}
