package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/errdefs"
)

const debugTargetPod = `
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

func debugger(name, target string) v1.EphemeralContainer {
	return v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: "busybox", Command: []string{"sleep", "1000"}},
		TargetContainerName:      target,
	}
}

func ephemeralStatus(pod v1.Pod, name string) v1.ContainerStatus {
	for _, st := range pod.Status.EphemeralContainerStatuses {
		if st.Name == name {
			return st
		}
	}
	return v1.ContainerStatus{}
}

func startCount(rt *criclienttest.Runtime, name string) int {
	n := 0
	for _, c := range rt.Calls() {
		if c == "start "+name {
			n++
		}
	}
	return n
}

// An ephemeral container added to a running pod starts in its target's
// process namespace, is never restarted, and is still part of the pod
// after the agent restarts.
func TestEphemeralContainerJoinsItsTargetAndOutlivesTheAgent(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, debugTargetPod)
	waitFor(t, "app runs", func() bool { return ctrStatus(first.pod(t, "web"), "app").State.Running != nil })
	pod, err := first.UpdateEphemeralContainers(context.Background(), "default", "web", []v1.EphemeralContainer{debugger("debugger-abcde", "app")})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Spec.EphemeralContainers; len(got) != 1 || got[0].ImagePullPolicy != v1.PullAlways || got[0].TerminationMessagePath == "" {
		t.Errorf("the pod's ephemeral containers = %+v; want one, with the API server's defaults", got)
	}
	waitFor(t, "the debugger runs", func() bool { return ephemeralStatus(first.pod(t, "web"), "debugger-abcde").State.Running != nil })
	appID := ctrStatus(first.pod(t, "web"), "app").ContainerID
	for id, ns := range rt.NamespaceOptions("debugger-abcde") {
		if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() == "" || !strings.HasSuffix(appID, "://"+ns.GetTargetId()) {
			t.Errorf("debugger %s: pid namespace %v target %q; want TARGET %s", id, ns.GetPid(), ns.GetTargetId(), appID)
		}
	}
	if err := rt.Exit("debugger-abcde", 3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the debugger terminated", func() bool {
		return ephemeralStatus(first.pod(t, "web"), "debugger-abcde").State.Terminated != nil
	})
	first.stop()

	second := startTestAgentIn(t, rt, dir)
	got := second.pod(t, "web")
	if len(got.Spec.EphemeralContainers) != 1 || got.Spec.EphemeralContainers[0].TargetContainerName != "app" {
		t.Fatalf("after a restart the pod's ephemeral containers = %+v; want the debugger", got.Spec.EphemeralContainers)
	}
	waitFor(t, "the restarted agent reports the debugger terminated", func() bool {
		st := ephemeralStatus(second.pod(t, "web"), "debugger-abcde")
		return st.State.Terminated != nil && st.State.Terminated.ExitCode == 3
	})
	if n := startCount(rt, "debugger-abcde"); n != 1 {
		t.Errorf("the debugger was started %d times; want once (never restarted)", n)
	}
	if !ready(second.pod(t, "web")) {
		t.Errorf("the pod is not ready: an ephemeral container does not count")
	}
}

// The agent refuses what the API server refuses of an update of the
// ephemeralcontainers subresource, and keeps the pod as it was.
func TestEphemeralContainersAreOnlyAdded(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	a.apply(t, debugTargetPod)
	ctx := context.Background()
	first := debugger("one", "")
	if _, err := a.UpdateEphemeralContainers(ctx, "default", "web", []v1.EphemeralContainer{first}); err != nil {
		t.Fatal(err)
	}
	changed := debugger("one", "")
	changed.Image = "other"
	withPort := debugger("two", "")
	withPort.Ports = []v1.ContainerPort{{ContainerPort: 80}}
	for _, tc := range []struct {
		name string
		list []v1.EphemeralContainer
		want string
	}{
		{"removed", nil, `existing ephemeral containers "one" may not be removed`},
		{"changed", []v1.EphemeralContainer{changed}, `existing ephemeral containers "one" may not be changed`},
		{"name of a container", []v1.EphemeralContainer{first, debugger("app", "")}, "spec.ephemeralContainers[1].name: Duplicate value"},
		{"ports", []v1.EphemeralContainer{first, withPort}, "spec.ephemeralContainers[1].ports: Forbidden"},
		{"unknown target", []v1.EphemeralContainer{first, debugger("two", "nope")}, "spec.ephemeralContainers[1].targetContainerName: Not found"},
	} {
		_, err := a.UpdateEphemeralContainers(ctx, "default", "web", tc.list)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Pod default/web") {
			t.Errorf("%s: err = %v; want an invalid argument naming the pod and saying %q", tc.name, err, tc.want)
		}
	}
	if got := a.pod(t, "web").Spec.EphemeralContainers; len(got) != 1 || got[0].Image != "busybox" {
		t.Errorf("after refused updates the pod's ephemeral containers = %+v; want the first one only", got)
	}
	if _, err := a.UpdateEphemeralContainers(ctx, "default", "nope", nil); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("unknown pod: err = %v; want not found", err)
	}
	if _, err := a.Delete(ctx, "default", "web", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpdateEphemeralContainers(ctx, "default", "web", []v1.EphemeralContainer{first, debugger("two", "")}); err != nil &&
		!errors.Is(err, errdefs.ErrFailedPrecondition) && !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("pod being deleted: err = %v; want a failed precondition (or not found once it is gone)", err)
	}
}

// A record of ephemeral containers that cannot be read is moved aside and
// reported, never removed; none is an empty list.
func TestLoadEphemeralSetsAsideWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	if r, err := loadEphemeral(dir, "uid-1"); err != nil || r.EphemeralContainers != nil {
		t.Fatalf("no record: %v, %v; want none", r, err)
	}
	if err := saveEphemeral(dir, "uid-1", []v1.EphemeralContainer{debugger("one", "")}, 2); err != nil {
		t.Fatal(err)
	}
	if r, err := loadEphemeral(dir, "uid-1"); err != nil || len(r.EphemeralContainers) != 1 || r.EphemeralContainers[0].Name != "one" || r.Generation != 2 {
		t.Fatalf("saved record: %+v, %v", r, err)
	}
	if _, err := loadEphemeral(dir, "uid-2"); err == nil || !strings.Contains(err.Error(), "moved aside") {
		t.Errorf("a record of another uid: err = %v; want it moved aside", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ephemeralFile+".unreadable")); err != nil {
		t.Errorf("the unreadable record is not kept aside: %v", err)
	}
	if _, err := loadEphemeral(dir, "../x"); err == nil {
		t.Errorf("a uid that is not a name: want an error")
	}
}
