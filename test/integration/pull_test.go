package integration

import (
	"compress/gzip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
	"github.com/berth-dev/berth/test/testimage"
)

// TestPullByTagAndDigest pulls OCI and Docker schema 2 images from a plain
// HTTP registry on 127.0.0.1 (no hosts config: loopback may use HTTP), by
// tag and by digest, and runs a container of the pulled image.
func TestPullByTagAndDigest(t *testing.T) {
	reg := startRegistry(t, registry.Options{})
	d := startDaemon(t, withHostsDir(t.TempDir()))
	marker := "pulled-" + harness.RandomHex(12)
	p, err := reg.PushImage("berth-test/tagged:v1", testimage.Options{
		Layers: 3, ExtraFiles: map[string]string{"/etc/pulled": marker + "\n"}, Cmd: []string{"cat", "/etc/pulled"},
	})
	if err != nil {
		t.Fatal(err)
	}
	d.mustPull(p.Ref, nil, p.ID)
	img := d.imageStatus(p.Ref)
	if img.GetId() != p.ID || !slices.Contains(img.GetRepoTags(), p.Ref) {
		t.Errorf("ImageStatus %s: id %s tags %v, want %s tagged %s", p.Ref, img.GetId(), img.GetRepoTags(), p.ID, p.Ref)
	}
	byDigest, err := p.ByDigest()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(img.GetRepoDigests(), byDigest) {
		t.Errorf("ImageStatus %s: repo digests %v, want %s", p.Ref, img.GetRepoDigests(), byDigest)
	}
	d.mustPull(byDigest, nil, p.ID)
	if got := d.imageStatus(byDigest).GetId(); got != p.ID {
		t.Errorf("ImageStatus %s: id %s, want %s", byDigest, got, p.ID)
	}
	if !hasLines(d.runImage("pulled", p.Ref), "stdout F "+marker) {
		t.Errorf("container of the pulled image %s did not print %s", p.Ref, marker)
	}

	docker, err := reg.PushDockerImage("berth-test/docker:v1", testimage.Options{
		Layers: 2, ExtraFiles: map[string]string{"/etc/docker-image": marker + "\n"},
	})
	if err != nil {
		t.Fatal(err)
	}
	d.mustPull(docker.Ref, nil, docker.ID)

	// Unknown tag and unknown repository: NotFound naming the reference.
	for _, ref := range []string{reg.Host + "/berth-test/tagged:absent", reg.Host + "/berth-test/absent:v1"} {
		_, err := d.pull(ref, nil)
		if msg := wantCode(t, "PullImage of "+ref, err, codes.NotFound); err != nil && !strings.Contains(msg, ref) {
			t.Errorf("PullImage %s: message %q does not name the reference", ref, msg)
		}
	}
}

// TestPullMultiArchIndex pulls an image index whose first entry is another
// architecture: berth must pick linux/<GOARCH> and never fetch the other's
// blobs.
func TestPullMultiArchIndex(t *testing.T) {
	reg := startRegistry(t, registry.Options{})
	d := startDaemon(t, withHostsDir(t.TempDir()))
	m, err := reg.PushMultiArch("berth-test/multi:v1", testimage.Options{
		Layers: 2, ExtraFiles: map[string]string{"/etc/multi": harness.RandomHex(12) + "\n"}, Cmd: []string{"cat", "/etc/multi"},
	})
	if err != nil {
		t.Fatal(err)
	}
	d.mustPull(m.Ref, nil, m.Host.ID)
	gets := blobGets(t, reg)
	for _, b := range m.Host.Blobs() {
		if gets[b] != 1 {
			t.Errorf("blob %s of the host's image: %d GETs, want 1", b, gets[b])
		}
	}
	otherOnly := []string{m.Other.Config, m.Other.Layers[len(m.Other.Layers)-1]}
	for _, b := range otherOnly {
		if gets[b] != 0 {
			t.Errorf("blob %s of the %s image: %d GETs, want none", b, m.OtherArch, gets[b])
		}
	}
	if len(d.runImage("multi", m.Ref)) == 0 {
		t.Errorf("container of the multi-arch image printed nothing")
	}
	// By the index's digest: the same platform choice.
	repo := m.Ref[:strings.LastIndex(m.Ref, ":")]
	d.mustPull(repo+"@"+m.IndexDigest, nil, m.Host.ID)
}

// TestRemovePulledImageFreesDisk pulls a 16 MiB image and removes it: the
// store's used bytes and files are back where they were.
func TestRemovePulledImageFreesDisk(t *testing.T) {
	reg := startRegistry(t, registry.Options{})
	d := startDaemon(t, withHostsDir(t.TempDir()))
	spec := registry.ImageSpec{LayerMiB: []int{8, 8}, TextPercent: 0, Level: gzip.BestSpeed}
	p, err := reg.PushBuiltImage("berth-test/filler:v1", filepath.Join(t.TempDir(), "layout"), spec)
	if err != nil {
		t.Fatal(err)
	}
	usedBefore, filesBefore := imageFsUsed(t, d), d.storeFiles()
	d.mustPull(p.Ref, nil, p.ID)
	usedPulled := imageFsUsed(t, d)
	const size = 16 << 20
	if usedPulled < usedBefore+size {
		t.Errorf("ImageFsInfo used bytes %d after pulling %d bytes of layers, want at least %d", usedPulled, size, usedBefore+size)
	}
	if _, err := d.Img.RemoveImage(d.ctx(), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: p.Ref}}); err != nil {
		t.Fatalf("RemoveImage %s: %v", p.Ref, err)
	}
	if usedAfter := imageFsUsed(t, d); usedAfter > usedBefore+64<<10 {
		t.Errorf("ImageFsInfo used bytes: %d before the pull, %d pulled, %d after RemoveImage; want back within 64 KiB",
			usedBefore, usedPulled, usedAfter)
	}
	if added, removed := diffLists(d.storeFiles(), filesBefore); len(added)+len(removed) > 0 {
		t.Errorf("image store after pull + RemoveImage: %v left, %v gone", added, removed)
	}
}
