package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is an in-memory registry on 127.0.0.1 whose handler chain a
// test can wrap, counting blob GETs by digest.
type testRegistry struct {
	srv  *httptest.Server
	host string

	mu        sync.Mutex
	blobGets  map[string]int
	wrap      func(http.Handler) http.Handler
	requests  int
	manifests int
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	r := &testRegistry{blobGets: map[string]int{}}
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests++
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:") {
			r.blobGets[req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]]++
		}
		if strings.Contains(req.URL.Path, "/manifests/") {
			r.manifests++
		}
		wrap := r.wrap
		r.mu.Unlock()
		if wrap != nil {
			wrap(inner).ServeHTTP(w, req)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

func (r *testRegistry) setWrap(wrap func(http.Handler) http.Handler) {
	r.mu.Lock()
	r.wrap = wrap
	r.mu.Unlock()
}

func (r *testRegistry) gets(digest string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blobGets[digest]
}

func (r *testRegistry) requestCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// push writes img (or an index) to the registry as <host>/<repo>:<tag>.
func (r *testRegistry) push(t *testing.T, repo, tag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(r.host + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

func (r *testRegistry) pushIndex(t *testing.T, repo, tag string, idx v1.ImageIndex) string {
	t.Helper()
	ref, err := name.ParseReference(r.host + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

// testLayer is a layer holding one file of size random bytes, compressed
// with comp ("" for none).
func testLayer(t *testing.T, file string, size int, comp compression.Compression) v1.Layer {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must(t, tw.WriteHeader(&tar.Header{Name: "data/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: time.Unix(1e9, 0)}))
	must(t, tw.WriteHeader(&tar.Header{Name: "data/" + file, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(size), ModTime: time.Unix(1e9, 0)}))
	_, err := tw.Write(data)
	must(t, err)
	must(t, tw.Close())
	raw := buf.Bytes()
	opener := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	var opts []tarball.LayerOption
	switch comp {
	case compression.ZStd:
		opts = append(opts, tarball.WithCompression(compression.ZStd), tarball.WithMediaType(types.OCILayerZStd))
	case compression.None:
		l, err := tarball.LayerFromOpener(opener, tarball.WithMediaType(types.OCIUncompressedLayer))
		if err != nil {
			t.Fatal(err)
		}
		return uncompressedLayer{l}
	}
	l, err := tarball.LayerFromOpener(opener, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// uncompressedLayer serves a layer's tar as its blob.
type uncompressedLayer struct{ v1.Layer }

func (u uncompressedLayer) Compressed() (io.ReadCloser, error) { return u.Uncompressed() }
func (u uncompressedLayer) Digest() (v1.Hash, error)           { return u.DiffID() }
func (u uncompressedLayer) Size() (int64, error) {
	rc, err := u.Uncompressed()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return io.Copy(io.Discard, rc)
}

// testImage stacks layers into a linux/<arch> image.
func testImage(t *testing.T, arch string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Config.Cmd = []string{"/bin/sh"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func hostImage(t *testing.T, layers int) v1.Image {
	t.Helper()
	var ls []v1.Layer
	for i := range layers {
		ls = append(ls, testLayer(t, fmt.Sprintf("f%d", i), 4096+i*1000, compression.GZip))
	}
	return testImage(t, runtime.GOARCH, ls...)
}

func imageID(t *testing.T, img v1.Image) string {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

func layerDigests(t *testing.T, img v1.Image) []string {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		d, _ := l.Digest()
		out = append(out, d.String())
	}
	return out
}

// newPullStore opens a store whose hosts dir is a fresh temp dir.
func newPullStore(t *testing.T, cfg PullConfig) (*Store, string) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "images"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HostsDir == "" {
		cfg.HostsDir = t.TempDir()
	}
	s.ConfigurePull(cfg)
	return s, cfg.HostsDir
}

func writeHosts(t *testing.T, dir, host, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// assertNothingStored fails unless the store has no image, blob or layer,
// and its tmp/ empties (flight cleanup runs in the background).
func assertNothingStored(t *testing.T, s *Store) {
	t.Helper()
	if imgs, _ := s.List(); len(imgs) != 0 {
		t.Errorf("store lists %d images after a failed pull", len(imgs))
	}
	for _, dir := range []string{s.blobDir(), s.layersDir(), s.indexDir()} {
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s holds %d entries after a failed pull", dir, len(entries))
		}
	}
	waitEmpty(t, s.tmpDir())
}

func waitEmpty(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries, _ := os.ReadDir(dir)
		if len(entries) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s still holds %d entries", dir, len(entries))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pull(t *testing.T, s *Store, ref string, opts PullOptions) (Image, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Pull(ctx, ref, opts)
}
