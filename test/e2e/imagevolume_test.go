package e2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/test/testimage"
)

const imageVolumeRef = "docker.io/berth-test/volume:v1"

const imageVolumePods = `
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, image: {reference: ` + imageVolumeRef + `}}
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: data, mountPath: /greeting, subPath: etc/greeting}
---
apiVersion: v1
kind: Pod
metadata: {name: absent}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, image: {reference: docker.io/berth-test/absent:v1}}
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    volumeMounts:
    - {name: data, mountPath: /data}
`

// TestImageVolumeFromManifest: a pod's image volume (KEP-4639) on berth:
// its container reads the image's files at the mount and under a subPath,
// cannot write there; the image stays through image garbage collection
// while the pod runs; a pod whose image volume's image cannot be pulled
// waits in ErrImagePull, then ImagePullBackOff. berth alone: the suite's
// containerd (1.6) has no image volumes.
func TestImageVolumeFromManifest(t *testing.T) {
	n := startNode(t, runtimes[0])
	n.importImages(testimage.Options{Name: imageVolumeRef, Bare: true,
		ExtraFiles: map[string]string{"/etc/greeting/hello": "hello from the image\n", "/readme": "volume\n"}})
	n.apply("imagevolume.yaml", imageVolumePods)
	n.waitPod("reader", "running", running("app"))
	for cmd, want := range map[string]string{
		"cat /data/readme":                     "volume",
		"cat /data/etc/greeting/hello":         "hello from the image",
		"cat /greeting/hello":                  "hello from the image",
		"touch /data/new 2>&1 || echo refused": "touch: /data/new: Read-only file system\nrefused",
	} {
		out, err := n.exec("reader", "app", "sh", "-c", cmd)
		if err != nil || strings.TrimSpace(out) != want {
			t.Errorf("%s: %q, %v; want %q", cmd, out, err, want)
		}
	}

	reasons := map[string]bool{}
	var message string
	n.waitPod("absent", "ErrImagePull, then ImagePullBackOff", func(p v1.Pod) bool {
		if w := containerStatus(p, "app").State.Waiting; w != nil {
			reasons[w.Reason] = true
			if w.Reason == "ErrImagePull" {
				message = w.Message
			}
		}
		return reasons["ErrImagePull"] && reasons["ImagePullBackOff"]
	})
	if !strings.Contains(message, "docker.io/berth-test/absent:v1") {
		t.Errorf("ErrImagePull message %q; want the image volume's image named", message)
	}

	// Garbage collection removes an unused image (the bare one the harness
	// imports), never the image volume's of the running pod.
	volumeID, bareID := n.imageID(imageVolumeRef), n.imageID(bareRef)
	n.restartAgentWith(gcAgent...)
	n.waitImageGone(bareID, "an image nothing uses")
	if !n.hasImage(volumeID) {
		t.Errorf("the image of the running pod's image volume (%s) was garbage collected", volumeID)
	}
	if out, err := n.exec("reader", "app", "cat", "/data/readme"); err != nil || strings.TrimSpace(out) != "volume" {
		t.Errorf("the image volume after a restart of berth serve: %q, %v", out, err)
	}
}
