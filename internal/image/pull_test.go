package image

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestPullByTagAndByDigest(t *testing.T) {
	reg := newTestRegistry(t)
	img := testImage(t, runtime.GOARCH,
		testLayer(t, "gz", 5000, compression.GZip),
		testLayer(t, "zst", 6000, compression.ZStd),
		testLayer(t, "plain", 7000, compression.None))
	ref := reg.push(t, "app/web", "v1", img)
	s, _ := newPullStore(t, PullConfig{})

	got, err := pull(t, s, ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != imageID(t, img) || len(got.Layers) != 3 {
		t.Fatalf("pulled %s with %d layers, want %s with 3", got.ID, len(got.Layers), imageID(t, img))
	}
	if len(got.RepoTags) != 1 || got.RepoTags[0] != ref {
		t.Errorf("repo tags = %v, want [%s]", got.RepoTags, ref)
	}
	paths, err := s.LayerPaths(got)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []string{"gz", "zst", "plain"} {
		if fi, err := os.Stat(paths[i] + "/data/" + f); err != nil || fi.Size() != int64(5000+1000*i) {
			t.Errorf("layer %d: file %s: %v", i, f, err)
		}
	}
	byDigest := got.RepoDigests[0]
	s2, _ := newPullStore(t, PullConfig{})
	again, err := pull(t, s2, byDigest, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != got.ID || len(again.RepoTags) != 0 || again.RepoDigests[0] != byDigest {
		t.Errorf("by digest: id %s tags %v digests %v", again.ID, again.RepoTags, again.RepoDigests)
	}
	// A digest the store holds is still resolved at the registry (a pull
	// proves access), but no layer is fetched again.
	before := reg.requestCount()
	if _, err := pull(t, s2, byDigest, PullOptions{}); err != nil || reg.requestCount() == before || reg.requestCount()-before >= 2+len(got.Layers) {
		t.Errorf("pull of a digest already stored: err %v, %d registry requests, want the manifest's and no layer's", err, reg.requestCount()-before)
	}
}

func TestPullIndexPicksHostPlatform(t *testing.T) {
	reg := newTestRegistry(t)
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	host := hostImage(t, 1)
	foreign := testImage(t, other, testLayer(t, "x", 100, compression.GZip))
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: foreign, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: other}}},
		mutate.IndexAddendum{Add: host, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}})
	ref := reg.pushIndex(t, "multi", "latest", idx)
	s, _ := newPullStore(t, PullConfig{})
	got, err := pull(t, s, ref, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != imageID(t, host) {
		t.Errorf("picked %s, want the %s image %s", got.ID, runtime.GOARCH, imageID(t, host))
	}
	idxDigest, _ := idx.Digest()
	if !strings.HasSuffix(got.RepoDigests[0], "@"+idxDigest.String()) {
		t.Errorf("repo digest %s, want the index digest %s", got.RepoDigests[0], idxDigest)
	}

	only := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: foreign, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: other}}})
	ref = reg.pushIndex(t, "foreign", "latest", only)
	_, err = pull(t, s, ref, PullOptions{})
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "no manifest for linux/"+runtime.GOARCH) {
		t.Errorf("index without the host platform: err = %v", err)
	}
	ref = reg.push(t, "foreign-single", "latest", foreign)
	if _, err = pull(t, s, ref, PullOptions{}); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "only") {
		t.Errorf("single image for another platform: err = %v", err)
	}
}

func TestPullUnknownImageIsNotFound(t *testing.T) {
	reg := newTestRegistry(t)
	s, _ := newPullStore(t, PullConfig{})
	_, err := pull(t, s, reg.host+"/nothing:here", PullOptions{})
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), reg.host+"/nothing:here") {
		t.Errorf("err = %v, want NotFound naming the reference", err)
	}
	if _, err := pull(t, s, "UPPER/Case", PullOptions{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("bad reference: err = %v, want InvalidArgument", err)
	}
}

func TestPullThroughMirrorWithFallback(t *testing.T) {
	mirror := newTestRegistry(t)
	upstream := newTestRegistry(t)
	img := hostImage(t, 2)
	mirror.push(t, "lib/app", "1", img)
	upstream.push(t, "lib/app", "1", img)
	s, hosts := newPullStore(t, PullConfig{})
	writeHosts(t, hosts, upstream.host, fmt.Sprintf("server = %q\n[host.%q]\ncapabilities = [\"pull\", \"resolve\"]\n",
		"http://"+upstream.host, "http://"+mirror.host))

	before := upstream.requestCount()
	if _, err := pull(t, s, upstream.host+"/lib/app:1", PullOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := upstream.requestCount() - before; n != 0 {
		t.Errorf("upstream got %d requests although the mirror has the image", n)
	}
	// Mirror down: the upstream serves.
	mirror.srv.Close()
	s2, _ := newPullStore(t, PullConfig{HostsDir: hosts})
	if _, err := pull(t, s2, upstream.host+"/lib/app:1", PullOptions{}); err != nil {
		t.Fatalf("mirror down: %v", err)
	}
	// Upstream down too: the error names both endpoints.
	upstream.srv.Close()
	s3, _ := newPullStore(t, PullConfig{HostsDir: hosts})
	_, err := pull(t, s3, upstream.host+"/lib/app:2", PullOptions{})
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), mirror.host) || !strings.Contains(err.Error(), upstream.host) {
		t.Errorf("both down: err = %v", err)
	}
}

func TestPullUpstreamDownUsesMirror(t *testing.T) {
	mirror := newTestRegistry(t)
	img := hostImage(t, 1)
	mirror.push(t, "lib/app", "1", img)
	s, hosts := newPullStore(t, PullConfig{})
	writeHosts(t, hosts, "127.0.0.1:1", fmt.Sprintf("[host.%q]\n", "http://"+mirror.host))
	got, err := pull(t, s, "127.0.0.1:1/lib/app:1", PullOptions{})
	if err != nil || got.ID != imageID(t, img) {
		t.Fatalf("pull through mirror with the upstream down: %v", err)
	}
}

func TestPullRewrite(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 1)
	reg.push(t, "k8s/pause", "3", img)
	s, hosts := newPullStore(t, PullConfig{})
	writeHosts(t, hosts, "upstream.example", fmt.Sprintf("server = %q\n[rewrite]\n\"^(.*)$\" = \"k8s/$1\"\n", "http://"+reg.host))
	got, err := pull(t, s, "upstream.example/pause:3", PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != imageID(t, img) || got.RepoTags[0] != "upstream.example/pause:3" {
		t.Errorf("got %s tagged %v", got.ID, got.RepoTags)
	}
	// The file is read again on every pull: a broken one is reported.
	writeHosts(t, hosts, "upstream.example", "server = 5\n")
	if _, err := pull(t, s, "upstream.example/pause:4", PullOptions{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("broken hosts.toml: err = %v, want InvalidArgument", err)
	}
}

func TestPullBasicAuth(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 1)
	ref := reg.push(t, "private/app", "1", img)
	reg.setWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "alice" || p != "secret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	s, _ := newPullStore(t, PullConfig{})
	_, err := pull(t, s, ref, PullOptions{})
	if !errors.Is(err, errdefs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "unauthorized") {
		t.Errorf("anonymous: err = %v, want FailedPrecondition unauthorized", err)
	}
	if _, err := pull(t, s, ref, PullOptions{Auth: &Auth{Username: "alice", Password: "wrong"}}); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("wrong password: err = %v", err)
	}
	got, err := pull(t, s, ref, PullOptions{Auth: &Auth{Auth: "YWxpY2U6c2VjcmV0"}}) // alice:secret
	if err != nil || got.ID != imageID(t, img) {
		t.Fatalf("with credentials: %v", err)
	}
	// Held in the store now, the image is still refused to a pull without
	// the credentials, by tag and by digest (what the agent's
	// ensure-secret-pulled check relies on).
	for _, r := range []string{ref, got.RepoDigests[0]} {
		if _, err := pull(t, s, r, PullOptions{}); !errors.Is(err, errdefs.ErrFailedPrecondition) {
			t.Errorf("anonymous pull of %s held in the store: err = %v, want FailedPrecondition", r, err)
		}
	}
}

// corruptBlob makes the registry serve digest's blob with one byte
// changed (or only its first half, when truncate is set).
func corruptBlob(reg *testRegistry, digest string, truncate bool) {
	reg.setWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/blobs/"+digest) || r.Method != http.MethodGet {
				next.ServeHTTP(w, r)
				return
			}
			rec := &bufferWriter{header: http.Header{}}
			next.ServeHTTP(rec, r)
			body := rec.body
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusOK)
			if truncate {
				_, _ = w.Write(body[:len(body)/2])
				return // the server closes the connection short of Content-Length
			}
			body[len(body)-20] ^= 0xff
			_, _ = w.Write(body) // the client sees what arrived
		})
	})
}

type bufferWriter struct {
	header http.Header
	body   []byte
}

func (b *bufferWriter) Header() http.Header { return b.header }
func (b *bufferWriter) WriteHeader(int)     {}
func (b *bufferWriter) Write(p []byte) (int, error) {
	b.body = append(b.body, p...)
	return len(p), nil
}

func TestPullBadBlobLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		truncate bool
		want     string
	}{{"digest mismatch", false, "digest mismatch"}, {"truncated", true, "truncated"}} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newTestRegistry(t)
			img := hostImage(t, 3)
			ref := reg.push(t, "app", "1", img)
			corruptBlob(reg, layerDigests(t, img)[1], tc.truncate)
			s, _ := newPullStore(t, PullConfig{})
			_, err := pull(t, s, ref, PullOptions{})
			if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want Unavailable saying %q", err, tc.want)
			}
			assertNothingStored(t, s)
		})
	}
}

func TestPullStallIsCancelled(t *testing.T) {
	reg := newTestRegistry(t)
	img := testImage(t, runtime.GOARCH, testLayer(t, "big", 256<<10, compression.None))
	ref := reg.push(t, "slow", "1", img)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	reg.setWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "/blobs/") || strings.Contains(r.URL.Path, imageID(t, img)) {
				next.ServeHTTP(w, r)
				return
			}
			rec := &bufferWriter{header: http.Header{}}
			next.ServeHTTP(rec, r)
			w.Header().Set("Content-Length", fmt.Sprint(len(rec.body)))
			for i := 0; i < len(rec.body); i += 10 {
				_, _ = w.Write(rec.body[i : i+10]) // the client sees what arrived
				w.(http.Flusher).Flush()
				select {
				case <-time.After(20 * time.Millisecond):
				case <-stop:
					return
				case <-r.Context().Done():
					return
				}
			}
		})
	})
	s, _ := newPullStore(t, PullConfig{MinThroughput: 100 << 10, StallWindow: 200 * time.Millisecond})
	start := time.Now()
	_, err := pull(t, s, ref, PullOptions{})
	if !errors.Is(err, errdefs.ErrUnavailable) || !strings.Contains(err.Error(), "stalled") {
		t.Errorf("err = %v, want Unavailable saying the download stalled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stall noticed after %s", d)
	}
	assertNothingStored(t, s)
}

func TestConcurrentPullsFetchEachBlobOnce(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 4)
	ref := reg.push(t, "popular", "1", img)
	s, _ := newPullStore(t, PullConfig{})
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pull(t, s, ref, PullOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range append(layerDigests(t, img), imageID(t, img)) {
		if n := reg.gets(d); n != 1 {
			t.Errorf("blob %s fetched %d times, want 1", d, n)
		}
	}
	waitEmpty(t, s.tmpDir())
}

func TestSharedLayerFetchedOnceAcrossImages(t *testing.T) {
	reg := newTestRegistry(t)
	base := testLayer(t, "base", 200<<10, compression.GZip)
	a := testImage(t, runtime.GOARCH, base, testLayer(t, "a", 1000, compression.GZip))
	b := testImage(t, runtime.GOARCH, base, testLayer(t, "b", 2000, compression.GZip))
	refA, refB := reg.push(t, "a", "1", a), reg.push(t, "b", "1", b)
	s, _ := newPullStore(t, PullConfig{})
	var wg sync.WaitGroup
	for _, ref := range []string{refA, refB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := pull(t, s, ref, PullOptions{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := reg.gets(layerDigests(t, a)[0]); n != 1 {
		t.Errorf("shared layer fetched %d times, want 1", n)
	}
	imgs, _ := s.List()
	if len(imgs) != 2 {
		t.Errorf("store lists %d images, want 2", len(imgs))
	}
}

func TestPullProgressEvents(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 3)
	ref := reg.push(t, "progress", "1", img)
	s, _ := newPullStore(t, PullConfig{})
	var mu sync.Mutex
	var events []PullProgress
	record := func(p PullProgress) { mu.Lock(); events = append(events, p); mu.Unlock() }
	if _, err := pull(t, s, ref, PullOptions{Progress: record}); err != nil {
		t.Fatal(err)
	}
	checkProgress(t, events, layerDigests(t, img), PullDone)
	events = nil
	if _, err := pull(t, s, ref, PullOptions{Progress: record}); err != nil {
		t.Fatal(err)
	}
	checkProgress(t, events, layerDigests(t, img), PullExists)
}

func checkProgress(t *testing.T, events []PullProgress, layers []string, final PullState) {
	t.Helper()
	last := map[string]int64{}
	finals := map[string]int{}
	for _, e := range events {
		if e.Ref == "" {
			t.Errorf("event without ref: %+v", e)
		}
		if e.Done < last[e.Layer] || (e.Total > 0 && e.Done > e.Total) {
			t.Errorf("layer %q: done went %d → %d (total %d)", e.Layer, last[e.Layer], e.Done, e.Total)
		}
		last[e.Layer] = e.Done
		if e.State == PullDone || e.State == PullExists || e.State == PullFailed {
			finals[e.Layer]++
			if e.Layer != "" && e.State != final {
				t.Errorf("layer %s ended %s, want %s", e.Layer, e.State, final)
			}
		}
	}
	for _, l := range layers {
		if finals[l] != 1 {
			t.Errorf("layer %s: %d final events, want 1", l, finals[l])
		}
	}
	if finals[""] != 1 || events[len(events)-1].State != PullDone || events[len(events)-1].Layer != "" {
		t.Errorf("image: %d final events, last event %+v; want one, done, last", finals[""], events[len(events)-1])
	}
}

func TestPullWaitersLeaveCancelsThePull(t *testing.T) {
	reg := newTestRegistry(t)
	img := hostImage(t, 1)
	ref := reg.push(t, "cancel", "1", img)
	block := make(chan struct{})
	reg.setWrap(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/blobs/") {
				select {
				case <-block:
				case <-r.Context().Done():
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	})
	defer close(block)
	s, _ := newPullStore(t, PullConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.Pull(ctx, ref, PullOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the caller's deadline", err)
	}
	assertNothingStored(t, s)
}

func TestPrune(t *testing.T) {
	reg := newTestRegistry(t)
	a, b := hostImage(t, 1), hostImage(t, 2)
	s, _ := newPullStore(t, PullConfig{})
	for _, ref := range []string{reg.push(t, "a", "1", a), reg.push(t, "b", "1", b)} {
		if _, err := pull(t, s, ref, PullOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := s.Prune(map[string]bool{imageID(t, a): true})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != imageID(t, b) {
		t.Errorf("removed %v, want [%s]", removed, imageID(t, b))
	}
	imgs, _ := s.List()
	if len(imgs) != 1 || imgs[0].ID != imageID(t, a) {
		t.Errorf("left %v", imgs)
	}
	for _, d := range layerDigests(t, b) {
		hex, _ := digestHex(d)
		if fileExists(s.blobPath(hex)) {
			t.Errorf("blob %s of the pruned image kept", d)
		}
	}
}
