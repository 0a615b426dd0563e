package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/dockerauth"
)

const privateImage = "reg.example:5000/team/app:v1"

// wantPassword makes the fake registry refuse privateImage unless the pull
// carries user "puller" with password pw.
func wantPassword(rt *criclienttest.Runtime, pw string) {
	rt.SetPullAuth(func(ref string, auth *runtimeapi.AuthConfig) error {
		if ref == privateImage && (auth.GetUsername() != "puller" || auth.GetPassword() != pw) {
			return errors.New("401 Unauthorized: authentication required")
		}
		return nil
	})
}

// TestPullSecretsTriedInTurn: the pod's registry secrets that match the
// image are tried in the pod's order until one pulls (a stale password
// first, the right one second); missing and non-registry secrets are
// skipped with kubelet's FailedToRetrieveImagePullSecret event.
func TestPullSecretsTriedInTurn(t *testing.T) {
	rt := criclienttest.New()
	wantPassword(rt, "right-pw")
	a := startTestAgent(t, rt)
	a.apply(t, `
apiVersion: v1
kind: Secret
metadata: {name: stale}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"https://reg.example:5000/v1/": {"username": "puller", "password": "old-pw"}}}'
---
apiVersion: v1
kind: Secret
metadata: {name: fresh}
type: kubernetes.io/dockercfg
stringData:
  .dockercfg: '{"reg.example:5000/team": {"auth": "cHVsbGVyOnJpZ2h0LXB3"}}'
---
apiVersion: v1
kind: Secret
metadata: {name: opaque}
stringData: {password: x}
---
apiVersion: v1
kind: Pod
metadata: {name: private}
spec:
  imagePullSecrets: [{name: absent}, {name: opaque}, {name: stale}, {name: fresh}]
  containers:
  - {name: app, image: "`+privateImage+`", command: [sleep, "1000"]}
`)
	waitFor(t, "private runs", func() bool { return ctrStatus(a.pod(t, "private"), "app").State.Running != nil })
	// "reg.example:5000/team" is more specific than the host: fresh first.
	pulls := slices.DeleteFunc(rt.Calls(), func(c string) bool { return !strings.HasPrefix(c, "pull ") })
	if want := []string{"pull " + privateImage + " as puller"}; !slices.Equal(pulls, want) {
		t.Errorf("pulls %v, want %v", pulls, want)
	}
	d, err := a.DescribePod("default", "private")
	if err != nil {
		t.Fatal(err)
	}
	if !hasEvent(d.Events, "FailedToRetrieveImagePullSecret", `"absent": not found`) ||
		!hasEvent(d.Events, "FailedToRetrieveImagePullSecret", `image pull secret "opaque": type Opaque`) {
		t.Errorf("events %+v lack FailedToRetrieveImagePullSecret for absent and opaque", d.Events)
	}
}

// TestSecondSecretPullsAfterTheFirstFails: two secrets under one key, the
// first with a wrong password: both are tried, in the pod's order.
func TestSecondSecretPullsAfterTheFirstFails(t *testing.T) {
	rt := criclienttest.New()
	wantPassword(rt, "right-pw")
	a := startTestAgent(t, rt)
	a.apply(t, `
apiVersion: v1
kind: Secret
metadata: {name: wrong}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"reg.example:5000": {"username": "puller", "password": "wrong-pw"}}}'
---
apiVersion: v1
kind: Secret
metadata: {name: right}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"reg.example:5000": {"username": "puller", "password": "right-pw"}}}'
---
apiVersion: v1
kind: Pod
metadata: {name: private}
spec:
  imagePullSecrets: [{name: wrong}, {name: right}]
  containers:
  - {name: app, image: "`+privateImage+`", command: [sleep, "1000"]}
`)
	waitFor(t, "private runs", func() bool { return ctrStatus(a.pod(t, "private"), "app").State.Running != nil })
	pulls := slices.DeleteFunc(rt.Calls(), func(c string) bool { return !strings.HasPrefix(c, "pull ") })
	if len(pulls) != 2 {
		t.Errorf("pulls %v, want two (the wrong password, then the right one)", pulls)
	}
}

// TestPullWithoutMatchingSecretFails: without a secret for its registry
// the pull is anonymous and fails (ErrImagePull naming the registry's
// refusal); a registry secret that does not parse fails the pull with a
// message naming the secret, and no pull is tried with it.
func TestPullWithoutMatchingSecretFails(t *testing.T) {
	rt := criclienttest.New()
	wantPassword(rt, "right-pw")
	a := startTestAgent(t, rt)
	a.apply(t, `
apiVersion: v1
kind: Secret
metadata: {name: elsewhere}
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '{"auths": {"other.example": {"username": "puller", "password": "right-pw"}}}'
---
apiVersion: v1
kind: Secret
metadata: {name: broken}
type: kubernetes.io/dockercfg
stringData:
  .dockercfg: '{"reg.example:5000": {"auth": "not base64 right-pw"}}'
---
apiVersion: v1
kind: Pod
metadata: {name: anonymous}
spec:
  imagePullSecrets: [{name: elsewhere}]
  containers:
  - {name: app, image: "`+privateImage+`", command: [sleep, "1000"]}
---
apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  imagePullSecrets: [{name: broken}]
  containers:
  - {name: app, image: "`+privateImage+`", command: [sleep, "1000"]}
`)
	waitFor(t, "anonymous fails with 401", func() bool {
		w := ctrStatus(a.pod(t, "anonymous"), "app").State.Waiting
		return w != nil && w.Reason == reasonErrImagePull && strings.Contains(w.Message, "401 Unauthorized")
	})
	var msg string
	waitFor(t, "broken fails naming its secret", func() bool {
		w := ctrStatus(a.pod(t, "broken"), "app").State.Waiting
		if w != nil && w.Reason == reasonErrImagePull {
			msg = w.Message
		}
		return strings.Contains(msg, `image pull secret "broken": entry "reg.example:5000": field auth: not base64`)
	})
	if strings.Contains(msg, "right-pw") {
		t.Errorf("message %q prints the secret", msg)
	}
	for _, c := range rt.Calls() {
		if strings.HasPrefix(c, "pull ") && strings.Contains(c, " as ") {
			t.Errorf("pull with credentials %q: no secret matches", c)
		}
	}
}

// nodeCredentials is a node-wide credential source that knows one image.
type nodeCredentials struct{ image, password string }

func (n nodeCredentials) Lookup(_ context.Context, image string) []dockerauth.Credential {
	if image != n.image {
		return nil
	}
	return []dockerauth.Credential{{Username: "puller", Password: n.password, Source: "plugin \"test\""}}
}

// TestNodeCredentialsWhenNoSecretMatches: the node's credential providers
// are asked when none of the pod's secrets match.
func TestNodeCredentialsWhenNoSecretMatches(t *testing.T) {
	rt := criclienttest.New()
	wantPassword(rt, "node-pw")
	a := startTestAgent(t, rt)
	a.deps.credentials = nodeCredentials{image: privateImage, password: "node-pw"}
	a.apply(t, `
apiVersion: v1
kind: Pod
metadata: {name: private}
spec:
  containers:
  - {name: app, image: "`+privateImage+`", command: [sleep, "1000"]}
`)
	waitFor(t, "private runs", func() bool { return ctrStatus(a.pod(t, "private"), "app").State.Running != nil })
}
