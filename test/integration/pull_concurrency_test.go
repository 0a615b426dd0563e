package integration

import (
	"compress/gzip"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
	"github.com/berth-dev/berth/test/testimage"
)

// TestConcurrentPullsFetchEachBlobOnce runs ten PullImage calls of one new
// image at once, then two images sharing four layers at once: the
// registry's access log shows every blob fetched once.
func TestConcurrentPullsFetchEachBlobOnce(t *testing.T) {
	reg := startRegistry(t, registry.Options{})
	d := startDaemon(t, withHostsDir(t.TempDir()))
	p, err := reg.PushImage("berth-test/concurrent:v1", testimage.Options{
		Layers: 8, ExtraFiles: map[string]string{"/etc/concurrent": harness.RandomHex(12) + "\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]string, 10)
	for i := range refs {
		refs[i] = p.Ref
	}
	for i, r := range d.pullAll(refs) {
		if r.err != nil || r.ref != p.ID {
			t.Errorf("concurrent PullImage %d of %s: ref %q error %v, want %s", i, p.Ref, r.ref, r.err, p.ID)
		}
	}
	gets := blobGets(t, reg)
	for _, b := range p.Blobs() {
		if gets[b] != 1 {
			t.Errorf("blob %s: %d GETs for ten concurrent pulls, want 1", b, gets[b])
		}
	}

	a, b, shared, err := reg.PushSharingLayers("berth-test/shared-a:v1", "berth-test/shared-b:v1")
	if err != nil {
		t.Fatal(err)
	}
	results := d.pullAll([]string{a.Ref, b.Ref, a.Ref, b.Ref})
	for i, want := range []string{a.ID, b.ID, a.ID, b.ID} {
		if results[i].err != nil || results[i].ref != want {
			t.Errorf("concurrent PullImage %d: ref %q error %v, want %s", i, results[i].ref, results[i].err, want)
		}
	}
	gets = blobGets(t, reg)
	for _, l := range shared {
		if gets[l] != 1 {
			t.Errorf("layer %s shared by two images pulled at once: %d GETs, want 1", l, gets[l])
		}
	}
}

// pullResult is one PullImage outcome.
type pullResult struct {
	ref string
	err error
}

// pullAll pulls every ref at once (released together) and waits for all.
func (d *daemon) pullAll(refs []string) []pullResult {
	out := make([]pullResult, len(refs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := d.pull(ref, nil)
			out[i] = pullResult{ref: resp.GetImageRef(), err: err}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// TestRegistryStoppedMidPull kills the registry after it has sent the first
// MiB of a 96 MiB image: PullImage fails with Unavailable naming the image,
// the store is exactly as before (no image, blob, layer or temp file), and
// the daemon still pulls from another registry.
func TestRegistryStoppedMidPull(t *testing.T) {
	reg := startRegistry(t, registry.Options{})
	d := startDaemon(t, withHostsDir(t.TempDir()))
	spec := registry.ImageSpec{LayerMiB: []int{24, 24, 24, 24}, TextPercent: 0, Level: gzip.NoCompression}
	p, err := reg.PushBuiltImage("berth-test/big:v1", filepath.Join(t.TempDir(), "layout"), spec)
	if err != nil {
		t.Fatal(err)
	}
	idsBefore, filesBefore := d.imageIDs(), d.storeFiles()
	from, err := reg.BytesWritten()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := d.pull(p.Ref, nil); done <- err }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := reg.WaitBytesWritten(ctx, from, 1<<20); err != nil {
		t.Fatalf("registry never sent the first MiB: %v", err)
	}
	if err := reg.Kill(); err != nil {
		t.Fatal(err)
	}
	var pullErr error
	select {
	case pullErr = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("PullImage %s still running 2 minutes after the registry was killed", p.Ref)
	}
	if pullErr == nil {
		t.Fatalf("PullImage %s succeeded although the registry was killed after %d bytes", p.Ref, 1<<20)
	}
	msg := wantCode(t, "PullImage with the registry killed mid-pull", pullErr, codes.Unavailable)
	t.Logf("PullImage with the registry killed mid-pull: %s", status.Convert(pullErr).Message())
	if !mentionsAny(msg, p.Ref, "berth-test/big") {
		t.Errorf("PullImage error %q does not name the image %s", msg, p.Ref)
	}
	checkStoreUnchanged(t, d, idsBefore, filesBefore)

	other := startRegistry(t, registry.Options{})
	small, err := other.PushImage("berth-test/after:v1", testimage.Options{
		ExtraFiles: map[string]string{"/etc/after": harness.RandomHex(12) + "\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	d.mustPull(small.Ref, nil, small.ID)
}

// checkStoreUnchanged waits up to 10 s for the store's images and files to
// be what they were.
func checkStoreUnchanged(t *testing.T, d *daemon, ids, files []string) {
	t.Helper()
	var added, removed []string
	same := eventually(10*time.Second, func() bool {
		added, removed = diffLists(d.storeFiles(), files)
		return len(added)+len(removed) == 0
	})
	if !same {
		t.Errorf("image store after the failed pull: left %s; gone %s", strings.Join(added, ", "), strings.Join(removed, ", "))
	}
	if now := d.imageIDs(); !slices.Equal(now, ids) {
		t.Errorf("ListImages after the failed pull: %v, want %v", now, ids)
	}
}
