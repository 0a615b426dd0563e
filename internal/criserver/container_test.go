package criserver

import (
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/pod"
)

// TestStatusMountsReportTheImageVolumesImageRef: ContainerStatus gives the
// mounts as asked, an image volume's with the image id as image_ref; the
// record's config is not changed.
func TestStatusMountsReportTheImageVolumesImageRef(t *testing.T) {
	cfg := &runtimeapi.ContainerConfig{Mounts: []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: "/srv"},
		{ContainerPath: "/vol", Image: &runtimeapi.ImageSpec{Image: "tools:v1"}, Readonly: true},
	}}
	c := &pod.Container{Config: cfg, ImageVolumes: []pod.ImageVolume{{Mount: 1, ImageID: "sha256:abc"}, {Mount: 7, ImageID: "sha256:x"}}}
	got := containerStatus(c).GetMounts()
	want := []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: "/srv"},
		{ContainerPath: "/vol", Image: &runtimeapi.ImageSpec{Image: "tools:v1", ImageRef: "sha256:abc"}, Readonly: true},
	}
	if len(got) != len(want) || !proto.Equal(got[0], want[0]) || !proto.Equal(got[1], want[1]) {
		t.Errorf("mounts %v, want %v", got, want)
	}
	if cfg.Mounts[1].GetImage().GetImageRef() != "" {
		t.Errorf("the record's config was changed: %v", cfg.Mounts[1])
	}
}
