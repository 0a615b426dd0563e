package integration

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestImages checks the image service against the imported test images.
func TestImages(t *testing.T) {
	d := startDaemon(t)
	ctx := d.ctx()

	// api.proto: "ListImages lists existing images."
	list, err := d.Img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatalf("ListImages: %v", err)
	}
	busyboxID := ""
	for _, img := range list.GetImages() {
		if slices.Contains(img.GetRepoTags(), busyboxRef) {
			busyboxID = img.GetId()
		}
	}
	if busyboxID == "" {
		t.Fatalf("ListImages %v lacks an image tagged %s", list.GetImages(), busyboxRef)
	}

	// api.proto: "If the image is not present, returns a response with
	// ImageStatusResponse.Image set to nil."
	st, err := d.Img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "berth.test/absent:v1"}})
	if err != nil || st.GetImage() != nil {
		t.Errorf("ImageStatus(unknown): image %v error %v, want nil and no error", st.GetImage(), err)
	}
	st, err = d.Img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	if err != nil || st.GetImage().GetId() != busyboxID {
		t.Errorf("ImageStatus(busybox): %v %v, want id %s", st.GetImage(), err, busyboxID)
	}

	// The test registries are a dead loopback port: PullImage asks the
	// registry even for an image in the store (as containerd does), and
	// reports it unavailable.
	_, err = d.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	wantCode(t, "PullImage of a present image from an unreachable registry", err, codes.Unavailable)
	_, err = d.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "berth.test/absent:v1"}})
	wantCode(t, "PullImage of an image not in the store", err, codes.Unavailable)
	if st, _ := d.Img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}}); st.GetImage().GetId() != busyboxID {
		t.Errorf("a failed PullImage changed the stored image: %v", st.GetImage())
	}

	checkStopSignalAndRemoval(t, d)
}

// checkStopSignalAndRemoval runs a container of the second image (stop
// signal SIGUSR1), then removes that image once no container uses it.
func checkStopSignalAndRemoval(t *testing.T, d *daemon) {
	ctx := d.ctx()
	d.importImage(stopLayout)
	usedBefore := imageFsUsed(t, d)

	podCfg := podConfig(t, "images")
	podID := d.runPod(podCfg)
	cfg := shell("trapper", "trap 'exit 42' USR1; echo ready; while true; do sleep 0.1; done")
	cfg.Image.Image = stopImage
	ctrID := d.run(podID, podCfg, cfg)
	if !eventually(5*time.Second, func() bool { return hasLines(readLog(t, logPath(podCfg, cfg)), "stdout F ready") }) {
		t.Fatalf("container of %s never printed ready", stopImage)
	}
	if _, err := d.RT.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: ctrID, Timeout: 10}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if st := d.containerStatus(ctrID); st.GetExitCode() != 42 {
		t.Errorf("container of an image with StopSignal SIGUSR1: exit code %d after StopContainer, want 42 (its USR1 trap)", st.GetExitCode())
	}

	_, err := d.Img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: stopImage}})
	wantCode(t, "RemoveImage of an image a container uses", err, codes.FailedPrecondition)
	if st, _ := d.Img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: stopImage}}); st.GetImage() == nil {
		t.Fatalf("image %s is gone after a refused RemoveImage", stopImage)
	}

	if _, err := d.RT.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctrID}); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	if _, err := d.Img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: stopImage}}); err != nil {
		t.Fatalf("RemoveImage after its container was removed: %v", err)
	}
	if st, err := d.Img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: stopImage}}); err != nil || st.GetImage() != nil {
		t.Errorf("ImageStatus after RemoveImage: %v %v, want nil", st.GetImage(), err)
	}
	// api.proto: "This call is idempotent, and must not return an error if the
	// image has already been removed."
	if _, err := d.Img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: stopImage}}); err != nil {
		t.Errorf("second RemoveImage: %v", err)
	}
	if usedAfter := imageFsUsed(t, d); usedAfter >= usedBefore {
		t.Errorf("ImageFsInfo used bytes %d after RemoveImage, want less than %d", usedAfter, usedBefore)
	}
	// The first image is untouched and still runs containers.
	id := d.run(podID, podCfg, shell("after", "true"))
	if st := d.waitExited(id, 10*time.Second); st.GetExitCode() != 0 {
		t.Errorf("busybox container after removing %s: exit code %d", stopImage, st.GetExitCode())
	}
}

// imageFsUsed is the used bytes ImageFsInfo reports.
func imageFsUsed(t *testing.T, d *daemon) uint64 {
	t.Helper()
	resp, err := d.Img.ImageFsInfo(d.ctx(), &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(resp.GetImageFilesystems()) == 0 {
		t.Fatalf("ImageFsInfo: %v %v", resp, err)
	}
	return resp.GetImageFilesystems()[0].GetUsedBytes().GetValue()
}
