package podspec

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestImageVolumeMounts: an image volume's mount asks the runtime for the
// image by the id the agent pulled, its subPath (subPathExpr expanded) as
// image_sub_path, read-only even when the manifest says readOnly: false;
// the volume has no host path.
func TestImageVolumeMounts(t *testing.T) {
	c := newContainer("app")
	c.Env = []v1.EnvVar{{Name: "DIR", Value: "etc"}}
	c.VolumeMounts = []v1.VolumeMount{
		{Name: "tools", MountPath: "/tools"},
		{Name: "tools", MountPath: "/etc-of-tools", SubPathExpr: "$(DIR)", ReadOnly: true},
	}
	pod := newPod(c)
	pod.Spec.Volumes = []v1.Volume{{Name: "tools", VolumeSource: v1.VolumeSource{
		Image: &v1.ImageVolumeSource{Reference: "tools:v1", PullPolicy: v1.PullIfNotPresent}}}}
	opts := ContainerOptions{ImageVolumes: map[string]string{"tools": "sha256:1234"}}
	cfg, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, opts, VolumePaths{})
	if err != nil {
		t.Fatal(err)
	}
	image := &runtimeapi.ImageSpec{Image: "sha256:1234", UserSpecifiedImage: "tools:v1"}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/tools", Image: image, Readonly: true},
		{ContainerPath: "/etc-of-tools", Image: image, ImageSubPath: "etc", Readonly: true},
	}
	for i, w := range want {
		if !proto.Equal(cfg.Mounts[i], w) {
			t.Errorf("mounts[%d] = %v, want %v", i, cfg.Mounts[i], w)
		}
	}

	opts.ImageVolumes = nil
	if _, err := ContainerConfig(pod, &pod.Spec.Containers[0], ContainerTypeRegular, 0, opts, VolumePaths{}); err == nil ||
		!strings.Contains(err.Error(), `image volume "tools": image "tools:v1" is not pulled`) {
		t.Errorf("image volume not pulled: %v", err)
	}
}
