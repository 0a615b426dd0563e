package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/registry"
	"github.com/berth-dev/berth/test/testimage"
)

// Kubelet's "ensure secret pulled images" (KEP-2535), under the default
// policy: pod a pulls a private image with its secret and runs; the
// agent is killed (kill -9) and started again; then b (IfNotPresent, no
// secret) must pull the present image again, anonymously, which the
// registry refuses (ErrImagePull, ImagePullBackOff), c (Never, no secret)
// gets ErrImageNeverPull saying why, neither ever runs, and d (the same
// secret) runs without a pull.
func TestImagePulledWithAnotherPodsSecret(t *testing.T) {
	onEachRuntime(t, imagePulledWithAnotherPodsSecret)
}

func imagePulledWithAnotherPodsSecret(t *testing.T, n *node) {
	reg := registry.StartT(t, registry.Options{Username: "puller", Password: "pw-" + harness.RandomHex(8)})
	n.rt.plainHTTPRegistry(t, reg.Host)
	pushed, err := reg.PushImage("berth-test/shared:v1", testimage.Options{ExtraFiles: map[string]string{"/etc/private": "shared\n"}})
	if err != nil {
		t.Fatal(err)
	}
	image := pushed.Ref
	secret := fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockercfg
stringData:
  .dockercfg: '{"%s": {"auth": "%s"}}'
`, reg.Host, base64.StdEncoding.EncodeToString([]byte(reg.Username+":"+reg.Password)))
	n.apply("a.yaml", secret+sharedImagePod("a", image, v1.PullIfNotPresent, true))
	n.waitPod("a", "running from the private image", running("app"))
	n.waitExec("a", "app", "the private image's file", func(out string) bool { return out == "shared\n" }, "cat", "/etc/private")

	n.restartAgent() // the record of a's pull survives kill -9
	n.apply("others.yaml", secret+sharedImagePod("b", image, v1.PullIfNotPresent, false)+
		sharedImagePod("c", image, v1.PullNever, false)+sharedImagePod("d", image, v1.PullIfNotPresent, true))

	n.waitPod("d", "running with the same secret", running("app"))
	if pulls := n.eventMessages("d", "Pulling"); len(pulls) > 0 {
		t.Errorf("d pulled the image again (%q); want it used as present", pulls)
	}
	if got := strings.Join(n.eventMessages("d", "Pulled"), "\n"); !strings.Contains(got, "already present on machine and can be accessed by the pod") {
		t.Errorf("d's Pulled events %q; want the image already present and accessible", got)
	}

	reasons := map[string]bool{}
	var pullMessage string
	n.waitPod("b", "ErrImagePull, then ImagePullBackOff", func(p v1.Pod) bool {
		if w := containerStatus(p, "app").State.Waiting; w != nil {
			reasons[w.Reason] = true
			if w.Reason == "ErrImagePull" {
				pullMessage = w.Message
			}
		}
		return reasons["ErrImagePull"] && reasons["ImagePullBackOff"]
	})
	lower := strings.ToLower(pullMessage)
	if !strings.Contains(pullMessage, image) || !strings.Contains(lower, "unauthorized") && !strings.Contains(lower, "401") ||
		!strings.Contains(pullMessage, "pulled with image pull secrets this pod does not have") {
		t.Errorf("b: ErrImagePull message %q; want the image, the registry's refusal (401 / unauthorized) and why it was pulled again", pullMessage)
	}

	never := n.waitPod("c", "ErrImageNeverPull", func(p v1.Pod) bool {
		w := containerStatus(p, "app").State.Waiting
		return w != nil && w.Reason == "ErrImageNeverPull"
	})
	if msg := containerStatus(never, "app").State.Waiting.Message; !strings.Contains(msg, image) || !strings.Contains(msg, "pulled with image pull secrets this pod does not have") {
		t.Errorf("c: ErrImageNeverPull message %q; want the image and why it may not be used", msg)
	}
	for _, name := range []string{"b", "c"} {
		if st := containerStatus(n.pod(name), "app"); st.ContainerID != "" || st.State.Running != nil || st.LastTerminationState.Terminated != nil {
			t.Errorf("%s's container was created: %+v", name, st)
		}
	}
	t.Logf("b: ErrImagePull: %s", pullMessage)
	t.Logf("c: ErrImageNeverPull: %s", containerStatus(never, "app").State.Waiting.Message)
	if strings.Contains(pullMessage, reg.Password) {
		t.Errorf("b: message %q holds the password", pullMessage)
	}
}

// sharedImagePod is a pod of image with a pull policy and, withSecret,
// imagePullSecrets regcred.
func sharedImagePod(name, image string, policy v1.PullPolicy, withSecret bool) string {
	refs := ""
	if withSecret {
		refs = "\n  imagePullSecrets: [{name: regcred}]"
	}
	return fmt.Sprintf(`
---
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1%s
  containers:
  - {name: app, image: %q, imagePullPolicy: %s, command: [sleep, "1000"]}
`, name, refs, image, policy)
}

// eventMessages are the messages of a pod's events with reason.
func (n *node) eventMessages(pod, reason string) []string {
	n.t.Helper()
	detail, err := n.client.DescribePod(context.Background(), "default", pod)
	if err != nil {
		n.t.Fatalf("describe %s: %v", pod, err)
	}
	var out []string
	for _, e := range detail.Events {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
