package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

const (
	toolsImage  = "reg.example:5000/team/tools:v1"
	absentImage = "reg.example:5000/team/absent:v1"
)

const imageVolumePods = `
apiVersion: v1
kind: Secret
metadata: {name: creds}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"reg.example:5000": {"username": "puller", "password": "pw"}}}'
---
apiVersion: v1
kind: Pod
metadata: {name: tools}
spec:
  imagePullSecrets: [{name: creds}]
  volumes:
  - {name: tools, image: {reference: "` + toolsImage + `"}}
  - {name: unused, image: {reference: "` + absentImage + `"}}
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    volumeMounts:
    - {name: tools, mountPath: /tools, subPath: bin}
---
apiVersion: v1
kind: Pod
metadata: {name: missing}
spec:
  volumes:
  - {name: data, image: {reference: "` + absentImage + `"}}
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: false}
`

// TestImageVolumes: an image volume's image is pulled with the pod's pull
// secrets, as the container's would be, and mounted by its id, its subPath
// as image_sub_path, read-only; an image volume no container mounts is not
// pulled; one whose image cannot be pulled holds its container in
// ErrImagePull, then ImagePullBackOff. The images count as needed for
// image garbage collection, and the runtime keeps a mounted one.
func TestImageVolumes(t *testing.T) {
	rt := criclienttest.New()
	rt.SetPullAuth(func(ref string, auth *runtimeapi.AuthConfig) error {
		switch {
		case ref == absentImage:
			return errors.New("manifest unknown")
		case ref == toolsImage && auth.GetUsername() != "puller":
			return errors.New("401 Unauthorized: authentication required")
		}
		return nil
	})
	a := startTestAgent(t, rt)
	a.apply(t, imageVolumePods)
	waitFor(t, "tools runs", func() bool { return ctrStatus(a.pod(t, "tools"), "app").State.Running != nil })
	reasons := map[string]bool{}
	var message string
	waitFor(t, "missing: ErrImagePull then ImagePullBackOff", func() bool {
		if w := ctrStatus(a.pod(t, "missing"), "app").State.Waiting; w != nil {
			reasons[w.Reason] = true
			if w.Reason == reasonErrImagePull {
				message = w.Message
			}
		}
		return reasons[reasonErrImagePull] && reasons[reasonImagePullBackOff]
	})
	if !strings.Contains(message, absentImage) || !strings.Contains(message, "manifest unknown") {
		t.Errorf("ErrImagePull message %q; want the image and the registry's answer", message)
	}
	pulls := slices.DeleteFunc(rt.Calls(), func(c string) bool { return !strings.HasPrefix(c, "pull ") })
	if !slices.Contains(pulls, "pull "+toolsImage+" as puller") || slices.Contains(pulls, "pull "+absentImage+" as puller") {
		t.Errorf("pulls %v; want %s with the pod's secret, and the unused volume's image not pulled for tools", pulls, toolsImage)
	}

	mount := toolsMount(t, rt)
	want := &runtimeapi.Mount{ContainerPath: "/tools", ImageSubPath: "bin", Readonly: true,
		Image: &runtimeapi.ImageSpec{Image: "sha256:" + toolsImage, UserSpecifiedImage: toolsImage}}
	if !proto.Equal(mount, want) {
		t.Errorf("tools' image volume mount %v; want %v", mount, want)
	}
	if needed := a.neededImages(); !slices.Contains(needed, toolsImage) || !slices.Contains(needed, absentImage) {
		t.Errorf("images needed %v; want the image volumes'", needed)
	}
	if err := rt.RemoveImage(context.Background(), toolsImage); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("RemoveImage of a mounted image volume's image: %v; want FailedPrecondition", err)
	}
}

// toolsMount is the image volume mount of pod tools' container.
func toolsMount(t *testing.T, rt *criclienttest.Runtime) *runtimeapi.Mount {
	t.Helper()
	ctx := context.Background()
	list, err := rt.ListContainers(ctx, map[string]string{"io.kubernetes.pod.name": "tools"})
	if err != nil || len(list) != 1 {
		t.Fatalf("containers of tools: %v %v", list, err)
	}
	st, err := rt.ContainerStatus(ctx, list[0].GetId())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range st.GetMounts() {
		if m.GetImage() != nil {
			return m
		}
	}
	t.Fatalf("tools' container has no image volume mount: %v", st.GetMounts())
	return nil
}
