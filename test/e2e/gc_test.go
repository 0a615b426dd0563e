package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/testimage"
)

// gcAgent makes image garbage collection run every second and find this
// disk over its high threshold whatever it holds: every image it may
// remove goes once it is a second old. The scenario turns it on once its
// pods run: before that, an image a pod is about to name is unused, and
// goes (as it would under kubelet).
var gcAgent = []string{
	"--image-gc-high-threshold=1", "--image-gc-low-threshold=0",
	"--image-minimum-gc-age=1s", "--image-gc-period=1s",
}

// Images are pulled (imported) and replaced while pods run, and the disk
// is "full": garbage collection removes the image of a deleted pod and an
// image nothing uses, and never one a pod needs: the replaced image a
// running container stands on, the image its pod names now, the image of
// a crash-looping container; the crash loop keeps two containers, the
// newest and the one before.
func TestGarbageCollectionKeepsWhatPodsNeed(t *testing.T) {
	onEachRuntimeWith(t, func(t *testing.T, start func(...string) *node) {
		garbageCollectionKeepsWhatPodsNeed(t, start())
	})
}

const (
	gcImageA = "docker.io/berth-test/gc-a:v1"
	gcImageB = "docker.io/berth-test/gc-b:v1"
	gcImageC = "docker.io/berth-test/gc-c:v1"
)

func garbageCollectionKeepsWhatPodsNeed(t *testing.T, n *node) {
	n.importImages(testimage.Options{Name: gcImageA, ExtraFiles: map[string]string{"/which": "a1"}},
		testimage.Options{Name: gcImageB, ExtraFiles: map[string]string{"/which": "b"}})
	n.apply("gc.yaml", `
apiVersion: v1
kind: Pod
metadata: {name: keep}
spec:
  containers:
  - {name: app, image: `+gcImageA+`, imagePullPolicy: Never, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: `+gcImageB+`, imagePullPolicy: Never, command: ["true"]}
---
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sh, -c, "exit 1"]}
`)
	n.waitPod("keep", "running", running("app"))
	n.waitPod("done", "succeeded", func(p v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	crash := n.waitPod("crash", "three restarts", func(p v1.Pod) bool { return containerStatus(p, "app").RestartCount >= 3 })
	if got := n.containersOf(string(crash.UID)); got > 2 {
		t.Errorf("the crash-looping pod has %d containers in the runtime; want the newest and the one before", got)
	}
	n.restartAgentWith(gcAgent...)
	a1, b := n.imageID(gcImageA), n.imageID(gcImageB)
	// Replace gc-a:v1 under the running pod, then delete the pod of gc-b.
	n.importImages(testimage.Options{Name: gcImageA, ExtraFiles: map[string]string{"/which": "a2"}})
	a2 := n.imageID(gcImageA)
	if a2 == a1 {
		t.Fatalf("gc-a:v1 is still %s after its replacement", a1)
	}
	n.must("delete", "pod", "done")
	n.waitImageGone(b, "the image of the deleted pod")
	// An image imported after the replacement goes too: by then the
	// replacement had its chance to go, and did not.
	n.importImages(testimage.Options{Name: gcImageC, ExtraFiles: map[string]string{"/which": "c"}})
	n.waitImageGone(n.imageID(gcImageC), "an image nothing uses")
	for _, img := range []struct{ ref, why string }{
		{a2, "the image the running pod names"},
		{"busybox", "the crash-looping container's image"},
	} {
		if !n.hasImage(img.ref) {
			t.Errorf("%s (%s) was removed", img.why, img.ref)
		}
	}
	// containerd forgets an image whose last tag moved (it lists images by
	// name); berth keeps it untagged while a container stands on it.
	if n.rt.name() == "berth" && !n.hasImage(a1) {
		t.Errorf("the replaced image the running container stands on (%s) was removed", a1)
	}
	if n.rt.name() == "berth" {
		n.checkOneImageFilesystem()
	}
	if st := containerStatus(n.pod("keep"), "app"); st.State.Running == nil || st.RestartCount != 0 {
		t.Errorf("keep's container: %+v; want running since the start", st.State)
	}
}

// checkOneImageFilesystem checks berth's ImageFsInfo: the image store and
// the writable layers, on one filesystem here, under one mountpoint (or
// kubelet would take the image filesystem for a split one), each with
// what it uses.
func (n *node) checkOneImageFilesystem() {
	n.t.Helper()
	resp, err := n.rt.images().ImageFsInfo(context.Background(), &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		n.t.Fatalf("ImageFsInfo: %v", err)
	}
	img, ctr := resp.GetImageFilesystems(), resp.GetContainerFilesystems()
	if len(img) != 1 || len(ctr) != 1 || img[0].GetFsId().GetMountpoint() != ctr[0].GetFsId().GetMountpoint() ||
		img[0].GetUsedBytes().GetValue() == 0 || ctr[0].GetUsedBytes().GetValue() == 0 || ctr[0].GetInodesUsed().GetValue() == 0 {
		n.t.Errorf("ImageFsInfo %v; want one image and one container filesystem under one mountpoint, each using space", resp)
	}
}

// importImages imports images built from busybox into the runtime.
func (n *node) importImages(images ...testimage.Options) {
	n.t.Helper()
	archive := filepath.Join(n.t.TempDir(), "images.tar")
	if err := testimage.WriteDockerArchive(archive, images...); err != nil {
		n.t.Fatal(err)
	}
	if err := n.rt.importImages(archive); err != nil {
		n.t.Fatal(err)
	}
}

// imageStatus is the runtime's image for ref (an id or a name), or nil.
func (n *node) imageStatus(ref string) *runtimeapi.Image {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := n.rt.images().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		n.t.Fatalf("image status %s: %v", ref, err)
	}
	return resp.GetImage()
}

func (n *node) hasImage(ref string) bool { return n.imageStatus(ref) != nil }

// imageID is the id of the image ref names; the test fails without one.
func (n *node) imageID(ref string) string {
	n.t.Helper()
	img := n.imageStatus(ref)
	if img == nil {
		n.t.Fatalf("the runtime has no image %s", ref)
	}
	return img.GetId()
}

// waitImageGone waits until garbage collection removed an image.
func (n *node) waitImageGone(id, what string) {
	n.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for n.hasImage(id) {
		if time.Now().After(deadline) {
			n.t.Fatalf("%s (%s) is still there after 60s\n%s", what, id, n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// containersOf counts the runtime's containers of a pod uid.
func (n *node) containersOf(uid string) int {
	n.t.Helper()
	resp, err := n.rt.cri().ListContainers(context.Background(), &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}},
	})
	if err != nil {
		n.t.Fatalf("list containers of pod %s: %v", uid, err)
	}
	return len(resp.GetContainers())
}
