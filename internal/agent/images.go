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
	"github.com/berth-dev/berth/internal/agent/pullrecords"
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
// Never refuses to pull. A present image the pod may not use as it is
// (pulled with another pod's secret: verifyPresentImage) is pulled again
// with the pod's own credentials, or refused with ErrImageNeverPull under
// Never. A pull uses the credentials pullCredentials finds, each in turn.
// A failed pull is the container's ErrImagePull, and later tries wait out
// a back-off (ImagePullBackOff), as in the kubelet.
func (w *podWorker) ensurePulled(ctx context.Context, d desiredPod, name string, p pullable, object string, sandbox *runtimeapi.PodSandboxConfig) (imageInfo, error) {
	present, err := w.deps.images.ImageStatus(ctx, p.image)
	if err != nil {
		return imageInfo{}, w.imageWaiting(name, object, reasonErrImagePull, fmt.Sprintf("Failed to inspect image %q: %v", p.image, err))
	}
	var verdict pullrecords.Decision
	switch {
	case p.policy == v1.PullNever && present == nil:
		return imageInfo{}, w.imageWaiting(name, object, reasonErrImageNeverPull,
			fmt.Sprintf("Container image %q is not present with pull policy of Never", p.image))
	case p.policy != v1.PullAlways && present != nil:
		verdict, err = w.verifyPresentImage(d, p.image, present.GetId())
		if err != nil {
			return imageInfo{}, w.imageWaiting(name, object, reasonErrImagePull,
				fmt.Sprintf("Failed to verify the pod's credentials for image %q: %v", p.image, err))
		}
		if !verdict.Pull {
			w.record(agentapi.EventNormal, "Pulled", object, fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", p.image))
			return infoOf(present), nil
		}
		if p.policy == v1.PullNever {
			return imageInfo{}, w.imageWaiting(name, object, reasonErrImageNeverPull, fmt.Sprintf(
				"Container image %q is present but may not be used by this pod with pull policy of Never: %s (image pull credentials verification, policy %s)",
				p.image, verdict.Why, w.deps.pullRecords.Policy()))
		}
		w.deps.log.Info("pulling a present image again with the pod's credentials", "pod", w.key, "container", name, "image", p.image, "reason", verdict.Why)
	}
	return w.pullFor(ctx, d, name, p, object, sandbox, verdict.Why)
}

// pullFor pulls an image container name needs with the pod's credentials,
// within the image's back-off; reverify says why a present image is pulled
// again ("" when it was not present, or policy Always).
func (w *podWorker) pullFor(ctx context.Context, d desiredPod, name string, p pullable, object string, sandbox *runtimeapi.PodSandboxConfig, reverify string) (imageInfo, error) {
	key := backoffKey(string(d.pod.UID), p.image)
	now := w.deps.clock.Now()
	if until := w.deps.pullBackoff.UntilRecorded(key, now); until.After(now) {
		w.record(agentapi.EventNormal, "BackOff", object, fmt.Sprintf("Back-off pulling image %q", p.image))
		w.setWaiting(name, podstatus.Waiting{Reason: reasonImagePullBackOff, Message: fmt.Sprintf("Back-off pulling image %q", p.image)})
		return imageInfo{}, errImageWaiting
	}
	w.record(agentapi.EventNormal, "Pulling", object, fmt.Sprintf("Pulling image %q", p.image))
	creds, skipped, err := w.pullCredentials(ctx, d.pod, d.sources, p.image)
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
		if reverify != "" {
			msg += "; the image is present, but may not be used by this pod without a pull: " + reverify
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
// (pullWith), between the image pull records' intent and the record of
// the credentials that pulled, and tracks the pull for the agent API
// (w.pulls): its layers and bytes as they arrive where the runtime
// reports them (criclient.PullWatcher), else its start and end; the
// image's size from ImageStatus. img is nil when ImageStatus fails.
func (w *podWorker) pullImage(ctx context.Context, image string, creds []pullCredential, sandbox *runtimeapi.PodSandboxConfig) (string, *runtimeapi.Image, error) {
	if err := w.deps.pullRecords.RecordPullIntent(image); err != nil {
		return "", nil, err
	}
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
	ref, used, err := w.pullWith(ctx, image, creds, sandbox)
	if err != nil {
		w.deps.pullRecords.RecordPullFailed(image)
		pull.End(err, 0)
		return "", nil, err
	}
	img, err := w.deps.images.ImageStatus(ctx, image)
	if err != nil {
		img = nil
	}
	id := img.GetId() // what verifyPresentImage looks records up by
	if id == "" {
		id = ref
	}
	if err := w.deps.pullRecords.RecordPulled(image, id, recordedCredentials(used)); err != nil {
		w.deps.log.Warn("image pull records: the pull is not recorded (the image counts as pulled with credentials unknown)", "pod", w.key, "image", image, "error", err)
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
