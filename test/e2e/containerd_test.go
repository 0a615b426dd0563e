package e2e

import (
	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/testimage"
)

// The test's private containerd is a harness.Containerd.

// busyboxRef is the name pods' "busybox" normalizes to.
const busyboxRef = "docker.io/library/busybox:latest"

// pauseRef names the sandbox image harness.WriteContainerdImages builds.
const pauseRef = harness.ContainerdPauseRef

// writeContainerdImages writes a `docker save` archive of the images
// containerd needs to path: the sandbox image (pauseRef: busybox with
// berth-pause as /pause, its entrypoint), busybox, and the bare image.
func writeContainerdImages(path, pauseBinary string) error {
	bare, err := bareImage(pauseBinary)
	if err != nil {
		return err
	}
	return harness.WriteContainerdImages(path, pauseBinary, testimage.Options{Name: busyboxRef}, bare)
}
