package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/podstatus"
	"github.com/berth-dev/berth/internal/dockerauth"
)

// imageInfo is what the agent learns about a container's image.
type imageInfo struct {
	ref  string // as the runtime identifies it
	user string // the image's USER ("" when unknown or unset)
	// volumes are the images of the image volumes the container mounts,
	// as the runtime identifies them, by volume name (ensureImageVolumes).
	volumes map[string]string
}

// Image pull waiting reasons, as the kubelet names them.
const (
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
)

// errImageWaiting marks an image that is not there yet; the container's
// waiting reason says why.
var errImageWaiting = errors.New("image not available")

// ensureImage makes the container's image present as its pull policy asks
// (ensurePulled).
func (w *podWorker) ensureImage(ctx context.Context, d desiredPod, c *v1.Container, object string, sandbox *runtimeapi.PodSandboxConfig) (imageInfo, error) {
	return w.ensurePulled(ctx, d, c.Name, pullable{image: c.Image, policy: c.ImagePullPolicy}, object, sandbox)
}

// pullable is an image a container needs, its own or an image volume's,
// and its pull policy.
type pullable struct {
	image  string
	policy v1.PullPolicy
}

// ensurePulled makes an image container name needs present as its pull
// policy asks: Always pulls; IfNotPresent pulls when the runtime lacks it;
// Never refuses to pull. A pull uses the credentials pullCredentials finds,
// each in turn. A failed pull is the container's ErrImagePull, and later
// tries wait out a back-off (ImagePullBackOff), as in the kubelet.
func (w *podWorker) ensurePulled(ctx context.Context, d desiredPod, name string, p pullable, object string, sandbox *runtimeapi.PodSandboxConfig) (imageInfo, error) {
	pod := d.pod
	present, err := w.deps.images.ImageStatus(ctx, p.image)
	if err != nil {
		return imageInfo{}, w.imageWaiting(name, object, reasonErrImagePull, fmt.Sprintf("Failed to inspect image %q: %v", p.image, err))
	}
	switch {
	case p.policy == v1.PullNever && present == nil:
		return imageInfo{}, w.imageWaiting(name, object, reasonErrImageNeverPull,
			fmt.Sprintf("Container image %q is not present with pull policy of Never", p.image))
	case p.policy != v1.PullAlways && present != nil:
		w.record(agentapi.EventNormal, "Pulled", object, fmt.Sprintf("Container image %q already present on machine", p.image))
		return infoOf(present), nil
	}
	key := backoffKey(string(pod.UID), p.image)
	now := w.deps.clock.Now()
	if until := w.deps.pullBackoff.UntilRecorded(key, now); until.After(now) {
		w.record(agentapi.EventNormal, "BackOff", object, fmt.Sprintf("Back-off pulling image %q", p.image))
		w.setWaiting(name, podstatus.Waiting{Reason: reasonImagePullBackOff, Message: fmt.Sprintf("Back-off pulling image %q", p.image)})
		return imageInfo{}, errImageWaiting
	}
	w.record(agentapi.EventNormal, "Pulling", object, fmt.Sprintf("Pulling image %q", p.image))
	creds, skipped, err := w.pullCredentials(ctx, pod, d.sources, p.image)
	w.reportSkippedSecrets(skipped)
	var ref string
	var img *runtimeapi.Image
	if err == nil {
		ref, img, err = w.pullImage(ctx, p.image, creds, sandbox)
	}
	if err != nil {
		failedAt := w.deps.clock.Now()
		w.deps.pullBackoff.Next(key, failedAt, failedAt)
		msg := fmt.Sprintf("Failed to pull image %q: %v", p.image, err)
		if len(skipped) > 0 {
			msg += "; image pull secrets not used: " + strings.Join(skipped, "; ")
		}
		return imageInfo{}, w.imageWaiting(name, object, reasonErrImagePull, msg)
	}
	w.deps.pullBackoff.Forget(key)
	w.record(agentapi.EventNormal, "Pulled", object, fmt.Sprintf("Successfully pulled image %q in %s", p.image, w.deps.clock.Now().Sub(now).Round(time.Millisecond)))
	if img != nil {
		return infoOf(img), nil
	}
	return imageInfo{ref: ref}, nil
}

// pullImage pulls image through the runtime with each of creds in turn
// (pullWith) and tracks the pull for the agent API (w.pulls): its layers
// and bytes as they arrive where the runtime reports them
// (criclient.PullWatcher), else its start and end; the image's size from
// ImageStatus. img is nil when ImageStatus fails.
func (w *podWorker) pullImage(ctx context.Context, image string, creds []dockerauth.Credential, sandbox *runtimeapi.PodSandboxConfig) (string, *runtimeapi.Image, error) {
	pull := w.pulls.Start(image)
	if watcher, ok := w.deps.images.(criclient.PullWatcher); ok {
		stop, err := watcher.WatchPull(image, pull.Event)
		if err != nil {
			w.deps.log.Debug("pull progress unavailable", "pod", w.key, "image", image, "error", err)
		} else {
			defer stop()
			pull.Detailed()
		}
	}
	ref, err := w.pullWith(ctx, image, creds, sandbox)
	if err != nil {
		pull.End(err, 0)
		return "", nil, err
	}
	img, err := w.deps.images.ImageStatus(ctx, image)
	if err != nil {
		img = nil
	}
	pull.End(nil, sizeOf(img))
	return ref, img, nil
}

// imageWaiting records an image problem as an event and container name's
// waiting reason.
func (w *podWorker) imageWaiting(name, object, reason, message string) error {
	w.record(agentapi.EventWarning, "Failed", object, message)
	w.record(agentapi.EventWarning, "Failed", object, "Error: "+reason)
	w.setWaiting(name, podstatus.Waiting{Reason: reason, Message: message})
	return errImageWaiting
}

func infoOf(img *runtimeapi.Image) imageInfo {
	info := imageInfo{ref: img.GetId(), user: img.GetUsername()}
	if uid := img.GetUid(); uid != nil {
		info.user = strconv.FormatInt(uid.GetValue(), 10)
	}
	return info
}

// sizeOf is the image's size as ImageStatus reports it (0 when unknown).
func sizeOf(img *runtimeapi.Image) int64 {
	size := img.GetSize()
	if size > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(size)
}
