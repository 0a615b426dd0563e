package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/pullrecords"
)

const pullerManifest = `
apiVersion: v1
kind: Secret
metadata: {name: regcred}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"reg.example:5000": {"username": "puller", "password": "right-pw"}}}'
`

// privatePod is a pod of privateImage with a pull policy and, when
// secret is not "", that image pull secret.
func privatePod(name string, policy v1.PullPolicy, secret string) string {
	refs := ""
	if secret != "" {
		refs = "\n  imagePullSecrets: [{name: " + secret + "}]"
	}
	return `
---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:` + refs + `
  containers:
  - {name: app, image: "` + privateImage + `", imagePullPolicy: ` + string(policy) + `, command: [sleep, "1000"]}
`
}

func pullCalls(rt *criclienttest.Runtime) []string {
	return slices.DeleteFunc(rt.Calls(), func(c string) bool { return !strings.HasPrefix(c, "pull ") })
}

func waitWaiting(t *testing.T, a *testAgent, pod, reason, text string) string {
	t.Helper()
	var msg string
	waitFor(t, pod+" waits in "+reason, func() bool {
		w := ctrStatus(a.pod(t, pod), "app").State.Waiting
		if w != nil && w.Reason == reason {
			msg = w.Message
		}
		return strings.Contains(msg, text)
	})
	return msg
}

// TestImagePulledWithAnotherPodsSecretIsVerified: pod a pulls a private
// image with its secret; b (IfNotPresent, no secret) must pull it again,
// anonymously, which the registry refuses; c (Never, no secret) gets
// ErrImageNeverPull saying why; d (the same secret) runs without a pull.
func TestImagePulledWithAnotherPodsSecretIsVerified(t *testing.T) {
	rt := criclienttest.New()
	wantPassword(rt, "right-pw")
	a := startTestAgent(t, rt)
	a.apply(t, pullerManifest+privatePod("a", v1.PullIfNotPresent, "regcred"))
	waitFor(t, "a runs", func() bool { return ctrStatus(a.pod(t, "a"), "app").State.Running != nil })
	if got, want := pullCalls(rt), []string{"pull " + privateImage + " as puller"}; !slices.Equal(got, want) {
		t.Fatalf("pulls %v, want %v", got, want)
	}
	a.apply(t, pullerManifest+privatePod("b", v1.PullIfNotPresent, "")+privatePod("c", v1.PullNever, "")+privatePod("d", v1.PullIfNotPresent, "regcred"))
	msg := waitWaiting(t, a, "b", reasonErrImagePull, "401 Unauthorized")
	if !strings.Contains(msg, "pulled with image pull secrets this pod does not have") {
		t.Errorf("b's message %q does not say why the present image was pulled again", msg)
	}
	msg = waitWaiting(t, a, "c", reasonErrImageNeverPull, "may not be used by this pod")
	if !strings.Contains(msg, "pulled with image pull secrets this pod does not have") || !strings.Contains(msg, "NeverVerifyPreloadedImages") {
		t.Errorf("c's message %q does not say why", msg)
	}
	waitFor(t, "d runs", func() bool { return ctrStatus(a.pod(t, "d"), "app").State.Running != nil })
	for _, c := range pullCalls(rt)[1:] {
		if c != "pull "+privateImage {
			t.Errorf("pull %q after a's: want only b's anonymous ones", c)
		}
	}
	d, err := a.DescribePod("default", "d")
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(d.Events, "Pulled", "already present on machine and can be accessed by the pod") {
		t.Errorf("d's events %+v lack Pulled: already present and can be accessed", d.Events)
	}
}

// TestPreloadedAndNodeWideImagesAreNotVerified: under the default policy
// an image the agent did not pull is used by any pod; under AlwaysVerify
// it is pulled again with the pod's credentials. An image pulled with the
// node's credentials (a plugin's) is used by any pod.
func TestPreloadedAndNodeWideImagesAreNotVerified(t *testing.T) {
	preloaded := "reg.example:5000/team/preloaded:v1"
	for _, tc := range []struct {
		policy   pullrecords.Policy
		wantPull bool
	}{{"", false}, {pullrecords.AlwaysVerify, true}} {
		rt := criclienttest.New()
		rt.AddImage(&runtimeapi.Image{Id: "sha256:preloaded", RepoTags: []string{preloaded}})
		agent, vols := newTestAgentWith(t, rt, t.TempDir(), clock.RealClock{}, func(c *Config) { c.PullVerification.Policy = tc.policy })
		a := runTestAgent(t, agent, vols)
		a.apply(t, strings.ReplaceAll(privatePod("p", v1.PullIfNotPresent, ""), privateImage, preloaded))
		waitFor(t, "p runs", func() bool { return ctrStatus(a.pod(t, "p"), "app").State.Running != nil })
		if pulled := len(pullCalls(rt)) > 0; pulled != tc.wantPull {
			t.Errorf("policy %q: pulls %v; want pulled %t", tc.policy, pullCalls(rt), tc.wantPull)
		}
	}

	rt := criclienttest.New()
	wantPassword(rt, "node-pw")
	a := startTestAgent(t, rt)
	a.deps.credentials = nodeCredentials{image: privateImage, password: "node-pw"}
	a.apply(t, privatePod("first", v1.PullIfNotPresent, ""))
	waitFor(t, "first runs", func() bool { return ctrStatus(a.pod(t, "first"), "app").State.Running != nil })
	a.deps.credentials = nil // the second pod could not pull
	a.apply(t, privatePod("second", v1.PullNever, ""))
	waitFor(t, "second runs", func() bool { return ctrStatus(a.pod(t, "second"), "app").State.Running != nil })
}

// TestPullRecordsSurviveARestart: a new agent on the same root still
// refuses the image to a pod without the secret; the records are under
// <root>/pullrecords, root-only, and hold no password.
func TestPullRecordsSurviveARestart(t *testing.T) {
	rt := criclienttest.New()
	wantPassword(rt, "right-pw")
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, pullerManifest+privatePod("a", v1.PullIfNotPresent, "regcred"))
	waitFor(t, "a runs", func() bool { return ctrStatus(first.pod(t, "a"), "app").State.Running != nil })
	first.stop()

	a := startTestAgentIn(t, rt, dir)
	a.apply(t, privatePod("c", v1.PullNever, ""))
	waitWaiting(t, a, "c", reasonErrImageNeverPull, "pulled with image pull secrets this pod does not have")

	records := filepath.Join(dir, "root", pullRecordsDir)
	if info, err := os.Stat(records); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v %v; want a 0700 directory", records, info, err)
	}
	pulled := filepath.Join(records, "pulled")
	entries, err := os.ReadDir(pulled)
	if err != nil || len(entries) != 1 {
		t.Fatalf("%s: %v %v; want one record", pulled, entries, err)
	}
	data, err := os.ReadFile(filepath.Join(pulled, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "right-pw") || !strings.Contains(string(data), `"name": "regcred"`) || !strings.Contains(string(data), `"credentialHash": "hmac-sha256:`) {
		t.Errorf("record %s; want the secret's name and keyed hash, no password", data)
	}
}
