package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/berth-dev/berth/internal/errdefs"
)

// rawConfigImage serves cfg, as is, as the config of an image.
type rawConfigImage struct {
	v1.Image
	cfg []byte
}

func (r *rawConfigImage) RawConfigFile() ([]byte, error) { return r.cfg, nil }
func (r *rawConfigImage) ConfigName() (v1.Hash, error) {
	sum := sha256.Sum256(r.cfg)
	return v1.NewHash("sha256:" + hex.EncodeToString(sum[:]))
}
func (r *rawConfigImage) Manifest() (*v1.Manifest, error) {
	m, err := r.Image.Manifest()
	if err != nil {
		return nil, err
	}
	m = m.DeepCopy()
	m.Config.Digest, _ = r.ConfigName()
	m.Config.Size = int64(len(r.cfg))
	return m, nil
}
func (r *rawConfigImage) RawManifest() ([]byte, error) {
	m, err := r.Manifest()
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
func (r *rawConfigImage) Digest() (v1.Hash, error) {
	b, err := r.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(b))
	return h, err
}
func (r *rawConfigImage) MediaType() (types.MediaType, error) {
	return types.DockerManifestSchema2, nil
}

func TestPullMalformedDiffIDJoinsNoLayer(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 2)
	raw, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["rootfs"].(map[string]any)["diff_ids"].([]any)[1] = "sha256:zz"
	bad, _ := json.Marshal(cfg)
	ref := reg.push(t, "bad", "1", &rawConfigImage{img, bad})
	s, _ := newPullStore(t, PullConfig{})

	_, err = pull(t, s, ref, PullOptions{})
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "diff id 1") {
		t.Errorf("err = %v, want Unavailable naming diff id 1", err)
	}
	for _, d := range layerDigests(t, img) {
		if n := reg.gets(d); n != 0 {
			t.Errorf("layer %s fetched %d times for a config that cannot be used", d, n)
		}
	}
	s.pull.layers.mu.Lock()
	flights := len(s.pull.layers.flights)
	s.pull.layers.mu.Unlock()
	if flights != 0 {
		t.Errorf("%d layer flights left after the pull returned", flights)
	}
	assertNothingStored(t, s)
}

func TestPullTooManyLayers(t *testing.T) {
	reg := newTestRegistry(t)
	l := testLayer(t, "x", 10, compression.GZip)
	layers := make([]v1.Layer, maxLayers+1)
	for i := range layers {
		layers[i] = l
	}
	ref := reg.push(t, "deep", "1", testImage(t, runtime.GOARCH, layers...))
	s, _ := newPullStore(t, PullConfig{})
	_, err := pull(t, s, ref, PullOptions{})
	if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), "129 layers") {
		t.Errorf("err = %v, want InvalidArgument naming 129 layers", err)
	}
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if n := reg.gets(d.String()); n != 0 {
		t.Errorf("layer fetched %d times", n)
	}
	assertNothingStored(t, s)
}

func TestWaitingLayerHasNoStaging(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 3)
	ref := reg.push(t, "queued", "1", img)
	started := make(chan struct{}, 3)
	release := make(chan struct{})
	reg.setWrap(blockLayerBlobs(imageID(t, img), started, release))
	s, _ := newPullStore(t, PullConfig{MaxConcurrentDownloads: 1})
	errc := make(chan error, 1)
	go func() { _, err := pull(t, s, ref, PullOptions{}); errc <- err }()
	<-started
	time.Sleep(200 * time.Millisecond) // the two waiting layers had time to stage, were they to
	entries, _ := os.ReadDir(s.tmpDir())
	close(release)
	if len(entries) != 1 {
		t.Errorf("tmp holds %d staging dirs while one layer downloads and two wait for a slot, want 1", len(entries))
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// blockLayerBlobs holds every blob GET but the config's until release is
// closed, reporting each on started.
func blockLayerBlobs(configDigest string, started chan<- struct{}, release <-chan struct{}) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") && !strings.HasSuffix(r.URL.Path, configDigest) {
				started <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestPullBlobRequestNeverAnsweredStalls(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 1)
	ref := reg.push(t, "hang", "1", img)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg.setWrap(blockLayerBlobs(imageID(t, img), make(chan struct{}, 8), release))
	s, _ := newPullStore(t, PullConfig{MinThroughput: 100 << 10, StallWindow: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := s.Pull(ctx, ref, PullOptions{})
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "stalled") {
		t.Errorf("err = %v, want Unavailable saying the download stalled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stall noticed after %s", d)
	}
	assertNothingStored(t, s)
}

func TestPullReturnsWithItsStagingGone(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 2)
	ref := reg.push(t, "gone", "1", img)
	started := make(chan struct{}, 8)
	release := make(chan struct{})
	defer close(release)
	reg.setWrap(blockLayerBlobs(imageID(t, img), started, release))
	s, _ := newPullStore(t, PullConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; <-started; cancel() }()
	if _, err := s.Pull(ctx, ref, PullOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the caller's cancellation", err)
	}
	if entries, _ := os.ReadDir(s.tmpDir()); len(entries) != 0 {
		t.Errorf("tmp holds %d entries when the cancelled pull returned", len(entries))
	}
}

func TestPullBlobMissingOnMirrorComesFromUpstream(t *testing.T) {
	mirror, upstream := newTestRegistry(t), newTestRegistry(t)
	img := hostImage(t, 2)
	mirror.push(t, "lib/app", "1", img)
	upstream.push(t, "lib/app", "1", img)
	missing := layerDigests(t, img)[1]
	mirror.setWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/blobs/"+missing) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown"}]}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	s, hosts := newPullStore(t, PullConfig{})
	writeHosts(t, hosts, upstream.host, fmt.Sprintf("server = %q\n[host.%q]\n", "http://"+upstream.host, "http://"+mirror.host))
	got, err := pull(t, s, upstream.host+"/lib/app:1", PullOptions{})
	if err != nil || got.ID != imageID(t, img) {
		t.Fatalf("pull with a blob missing on the mirror: %v", err)
	}
	if n := upstream.gets(missing); n != 1 {
		t.Errorf("upstream served the missing blob %d times, want 1", n)
	}
	if n := upstream.gets(layerDigests(t, img)[0]); n != 0 {
		t.Errorf("upstream served a blob the mirror has %d times", n)
	}

	// No other endpoint: Unavailable, naming the blob and the endpoint.
	s2, _ := newPullStore(t, PullConfig{})
	_, err = pull(t, s2, mirror.host+"/lib/app:1", PullOptions{})
	want := "blob " + missing + " missing on endpoint http://" + mirror.host
	if !errors.Is(err, errdefs.ErrUnavailable) || errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want Unavailable saying %q", err, want)
	}
	assertNothingStored(t, s2)
}

// staleDir creates tmp/<name> with a file in it, last modified two minutes ago.
func staleDir(t *testing.T, s *Store, name string) string {
	t.Helper()
	dir := filepath.Join(s.tmpDir(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "partial"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPullAndPruneClearDeadStaging(t *testing.T) {
	reg := newTestRegistry(t)
	ref := reg.push(t, "app", "1", hostImage(t, 1))
	s, _ := newPullStore(t, PullConfig{})
	held := staleDir(t, s, "import-live")
	f, err := holdDir(held)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	dead := staleDir(t, s, "import-dead1")
	if _, err := pull(t, s, ref, PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pull left a dead pull's staging: %v", err)
	}
	dead = staleDir(t, s, "import-dead2")
	if _, err := s.Prune(map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("prune left a dead pull's staging: %v", err)
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("staging held by a live writer removed: %v", err)
	}
}

func TestProgressHubReplaysLatestState(t *testing.T) {
	var h progressHub
	h.emit(PullProgress{Ref: "r", State: PullDownloading, Total: 30})
	h.emit(PullProgress{Ref: "r", Layer: "a", State: PullWaiting, Total: 10})
	h.emit(PullProgress{Ref: "r", Layer: "a", State: PullDownloading, Done: 4, Total: 10})
	h.emit(PullProgress{Ref: "r", Layer: "b", State: PullWaiting, Total: 20})
	var got []PullProgress
	unsubscribe := h.subscribe(func(p PullProgress) { got = append(got, p) })
	defer unsubscribe()
	h.emit(PullProgress{Ref: "r", Layer: "a", State: PullDone, Done: 10, Total: 10})
	want := []PullProgress{
		{Ref: "r", State: PullDownloading, Total: 30},
		{Ref: "r", Layer: "a", State: PullDownloading, Done: 4, Total: 10},
		{Ref: "r", Layer: "b", State: PullWaiting, Total: 20},
		{Ref: "r", Layer: "a", State: PullDone, Done: 10, Total: 10},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("subscriber saw %v, want %v", got, want)
	}
}
