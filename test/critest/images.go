package critest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where critest pulls from, and the repository prefix gcr.io's images are
// rewritten to in the local registry.
const (
	e2eRepo      = "registry.k8s.io/e2e-test-images/"
	criToolsRepo = "gcr.io/k8s-staging-cri-tools/"
	// RewrittenCRITools is where the local registry keeps gcr.io's
	// k8s-staging-cri-tools repositories; berth's hosts.toml for gcr.io
	// rewrites the one to the other.
	RewrittenCRITools = "berth-critest/"
)

// Image is one image critest pulls: the names it knows it by and what it
// must contain.
type Image struct {
	Names   []string // fully qualified references, tags only
	Config  v1.Config
	Extra   func(l layerFiles, progs Programs) error // files on top of the base layer
	Variant string                                   // makes otherwise equal images differ
}

// Programs are the Go programs built for the images.
type Programs struct {
	FakeNginx  string // cmd/fakenginx
	NoNewPrivs string // cmd/nonewprivs
}

var defaultEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// Images is every image the specs berth runs pull (the impossible ones are
// in skip.txt).
func Images() []Image {
	sh := v1.Config{Cmd: []string{"sh"}, Env: defaultEnv}
	user := func(u string) v1.Config { c := sh; c.User = u; return c }
	nginx := v1.Config{Cmd: []string{"nginx"}, Env: defaultEnv, StopSignal: "SIGQUIT",
		ExposedPorts: map[string]struct{}{"80/tcp": {}}}
	hostNginx := nginx
	hostNginx.Cmd = []string{"nginx", "12003"}
	withNginx := func(l layerFiles, p Programs) error { return l.addHostFile("usr/sbin/nginx", p.FakeNginx, 0o755) }
	return []Image{
		{Names: []string{e2eRepo + "busybox:1.29-2"}, Config: sh},
		// One image under two registries' names (the same digest): a pause
		// that exits on SIGTERM, as the real one does.
		{Names: []string{"registry.k8s.io/pause:3.9", "k8s.gcr.io/pause:3.9"}, Variant: "pause",
			Config: v1.Config{Env: defaultEnv, Cmd: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}},
		{Names: []string{e2eRepo + "nginx:1.14-2"}, Config: nginx, Extra: withNginx},
		{Names: []string{criToolsRepo + "hostnet-nginx-" + runtime.GOARCH + ":latest"}, Config: hostNginx, Extra: withNginx},
		{Names: []string{e2eRepo + "httpd:2.4.39-4"}, Config: v1.Config{Env: defaultEnv,
			Cmd: []string{"sh", "-c", "echo 'httpd: serving /usr/share/nginx/html on :80'; exec httpd -f -p 80 -h /usr/share/nginx/html"}}},
		{Names: []string{e2eRepo + "nonewprivs:1.3"}, Config: v1.Config{Env: defaultEnv, Cmd: []string{"/usr/local/bin/nnp"}},
			Extra: func(l layerFiles, p Programs) error {
				if err := l.addHostFile("usr/local/bin/nnp", p.NoNewPrivs, 0o4755); err != nil {
					return err
				}
				return nil
			}},
		{Names: []string{criToolsRepo + "test-image-user-uid:latest"}, Config: user("1002")},
		{Names: []string{criToolsRepo + "test-image-user-username:latest"}, Config: user("www-data")},
		{Names: []string{criToolsRepo + "test-image-user-uid-group:latest"}, Config: user("1003:1003")},
		{Names: []string{criToolsRepo + "test-image-user-username-group:latest"}, Config: user("www-data:www-data")},
		{Names: []string{criToolsRepo + "test-image-predefined-group:latest"}, Config: user("1000")},
		{Names: []string{criToolsRepo + "test-image-latest:latest"}, Config: sh, Variant: "latest"},
		{Names: []string{criToolsRepo + "test-image-tag:test", criToolsRepo + "test-image-tag:all"}, Config: sh, Variant: "tag"},
		{Names: []string{criToolsRepo + "test-image-1:latest"}, Config: sh, Variant: "1"},
		{Names: []string{criToolsRepo + "test-image-2:latest"}, Config: sh, Variant: "2"},
		{Names: []string{criToolsRepo + "test-image-3:latest"}, Config: sh, Variant: "3"},
		{Names: []string{criToolsRepo + "test-image-tags:1", criToolsRepo + "test-image-tags:2", criToolsRepo + "test-image-tags:3"},
			Config: sh, Variant: "tags"},
	}
}

// Build makes the image on a shared base layer.
func (im Image) Build(base v1.Layer, progs Programs) (v1.Image, error) {
	layers := []v1.Layer{base}
	top := layerFiles{}
	if im.Extra != nil {
		if err := im.Extra(top, progs); err != nil {
			return nil, fmt.Errorf("image %s: %w", im.Names[0], err)
		}
	}
	if im.Variant != "" {
		top.addText("etc/critest-variant", 0o644, im.Variant+"\n")
	}
	if len(top) > 0 {
		l, err := layerOf(top)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	return Assemble(layers, im.Config)
}

// Assemble makes an OCI image of layers (bottom first) with config, for
// linux on this machine's architecture, created at the epoch so that the
// same inputs give the same digest.
func Assemble(layers []v1.Layer, config v1.Config) (v1.Image, error) {
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layers...)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = runtime.GOARCH, "linux", v1.Time{Time: epoch}
	cf.Config = config
	return mutate.ConfigFile(img, cf)
}

// BaseLayer builds the busybox layer every image shares.
func BaseLayer() (v1.Layer, error) {
	return BaseLayerOf(hostBusybox())
}

func layerOf(files layerFiles) (v1.Layer, error) {
	data, err := files.tarBytes()
	if err != nil {
		return nil, err
	}
	// Check the tar reads back before it becomes a blob.
	if _, err := tar.NewReader(bytes.NewReader(data)).Next(); err != nil {
		return nil, fmt.Errorf("layer tar: %w", err)
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
