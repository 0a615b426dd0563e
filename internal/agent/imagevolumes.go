package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// ensureImageVolumes makes present the images of the image volumes
// container c mounts, each as its volume's pullPolicy asks, exactly as
// c's own image (ensurePulled: the pod's pull secrets and the node's
// credentials, the pull back-off, ErrImagePull then ImagePullBackOff as
// c's waiting reason). It returns their ids by volume name, for
// podspec.ContainerOptions.ImageVolumes. An image volume no container
// mounts is never pulled, so it cannot hold the pod back, as in the
// kubelet.
func (w *podWorker) ensureImageVolumes(ctx context.Context, d desiredPod, c *v1.Container, object string, sandbox *runtimeapi.PodSandboxConfig) (map[string]string, error) {
	var ids map[string]string
	for _, vm := range c.VolumeMounts {
		source := podspec.ImageVolumeSource(d.pod, vm.Name)
		if source == nil || ids[vm.Name] != "" {
			continue
		}
		info, err := w.ensurePulled(ctx, d, c.Name, pullable{image: source.Reference, policy: source.PullPolicy}, object, sandbox)
		if err != nil {
			return nil, err
		}
		if ids == nil {
			ids = map[string]string{}
		}
		ids[vm.Name] = info.ref
	}
	return ids, nil
}
