package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/errdefs"
)

const uidPodYAML = `
apiVersion: v1
kind: Pod
metadata: {name: %s%s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, "1000"]}
`

// A pod whose manifest names another pod's uid is a pod of its own:
// deleting it leaves the other running, with its uid.
func TestManifestUIDDoesNotAliasAnotherPod(t *testing.T) {
	rt := criclienttest.New()
	a := startTestAgent(t, rt)
	uidA := a.apply(t, fmt.Sprintf(uidPodYAML, "a", "")).Pods()[0].UID
	waitFor(t, "a runs", func() bool { return a.pod(t, "a").Status.Phase == v1.PodRunning })

	resp := a.apply(t, fmt.Sprintf(uidPodYAML, "b", ", uid: "+uidA))
	b := resp.Pods()[0]
	if b.UID == uidA || b.Outcome != agentapi.OutcomeCreated || !strings.Contains(b.Message, "ignored") {
		t.Fatalf("pod b applied with a's uid: %+v; want it created with a uid of its own and a warning", b)
	}
	waitFor(t, "b runs", func() bool { return a.pod(t, "b").Status.Phase == v1.PodRunning })
	if _, err := a.Delete(context.Background(), "default", "b", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b is gone", func() bool { return len(a.ListPods("").Items) == 1 })
	pod := a.pod(t, "a")
	if string(pod.UID) != uidA || pod.DeletionTimestamp != nil || pod.Status.Phase != v1.PodRunning {
		t.Errorf("after deleting b, a is uid %s, deleting %v, %s; want uid %s, running", pod.UID, pod.DeletionTimestamp, pod.Status.Phase, uidA)
	}
	if sandboxes, _ := rt.Counts(); sandboxes != 1 {
		t.Errorf("the runtime holds %d sandboxes, want a's alone", sandboxes)
	}
}

// A bundle built by hand (not through the manifest package) that gives a
// pod another pod's uid is refused before anything changes.
func TestHandBuiltBundleNamingAnotherPodsUIDIsRefused(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	uidA := a.apply(t, fmt.Sprintf(uidPodYAML, "a", "")).Pods()[0].UID
	sly := bundle(t, fmt.Sprintf(uidPodYAML, "sly", ""))
	sly.Pods[0].UID = types.UID(uidA)
	_, err := a.Apply(context.Background(), agentapi.ApplyRequest{Bundle: sly})
	if !errors.Is(err, errdefs.ErrAlreadyExists) || !strings.Contains(err.Error(), "default/a") {
		t.Errorf("apply of a pod carrying a's uid: %v; want already exists naming default/a", err)
	}
	twins := bundle(t, fmt.Sprintf(uidPodYAML, "one", "")+"---"+fmt.Sprintf(uidPodYAML, "two", ""))
	twins.Pods[1].UID = twins.Pods[0].UID
	if _, err := a.Apply(context.Background(), agentapi.ApplyRequest{Bundle: twins}); !errors.Is(err, errdefs.ErrAlreadyExists) {
		t.Errorf("apply of two pods with one uid: %v; want already exists", err)
	}
	if items := a.ListPods("").Items; len(items) != 1 || string(items[0].UID) != uidA {
		t.Errorf("pods after the refusals: %d; want a alone, uid %s", len(items), uidA)
	}
}

// A pod an older agent ran under its manifest's uid is recovered under
// that uid after a restart; applying its manifest again replaces it once,
// under the uid the agent derives, and the new pod is deleted by name.
func TestPodWithALegacyUIDIsRecoveredThenReplacedOnce(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	const legacy = "11111111-2222-3333-4444-555555555555"
	old := bundle(t, fmt.Sprintf(uidPodYAML, "old", ""))
	old.Pods[0].UID = legacy // as an older agent honoured the manifest's
	if _, err := first.Apply(context.Background(), agentapi.ApplyRequest{Bundle: old}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "old runs", func() bool { return first.pod(t, "old").Status.Phase == v1.PodRunning })
	first.stop()

	second := startTestAgentIn(t, rt, dir)
	if pod := second.pod(t, "old"); string(pod.UID) != legacy {
		t.Fatalf("recovered pod uid %s, want %s", pod.UID, legacy)
	}
	r := second.apply(t, fmt.Sprintf(uidPodYAML, "old", ", uid: "+legacy)).Pods()[0]
	if r.UID == legacy || r.Outcome != agentapi.OutcomeConfigured {
		t.Fatalf("re-apply of the legacy manifest: %+v; want the pod configured (replaced) under a derived uid", r)
	}
	waitFor(t, "the replacement runs alone", func() bool {
		items := second.ListPods("").Items
		return len(items) == 1 && string(items[0].UID) == r.UID && items[0].Status.Phase == v1.PodRunning
	})
	if again := second.apply(t, fmt.Sprintf(uidPodYAML, "old", ", uid: "+legacy)).Pods()[0]; again.Outcome != agentapi.OutcomeUnchanged || again.UID != r.UID {
		t.Errorf("a second re-apply: %+v; want unchanged, uid %s", again, r.UID)
	}
	if _, err := second.Delete(context.Background(), "default", "old", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod is gone", func() bool { return len(second.ListPods("").Items) == 0 })
}
