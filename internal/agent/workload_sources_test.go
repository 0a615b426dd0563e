package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/errdefs"
)

const scaledToZero = `
apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {greeting: hello}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: busybox:1, command: [sleep, "1000"], envFrom: [{configMapRef: {name: conf}}]}
`

// A Deployment scaled up from 0 after a restart makes a pod that finds the
// ConfigMap its template refers to, though no pod held it across the
// restart; deleting the Deployment removes the copy kept for it.
func TestTemplateSourcesSurviveARestart(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	first.apply(t, scaledToZero)
	uid := string(first.deployment(t).UID)
	first.stop()

	second := startTestAgentIn(t, rt, dir)
	if _, err := second.Scale(context.Background(), agentapi.ResourceDeployment, "default", "web", 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new pod runs with its ConfigMap", func() bool { return readyCount(second.ownedPods("ReplicaSet")) == 1 })

	if _, err := second.DeleteWorkload(context.Background(), agentapi.ResourceDeployment, "default", "web", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Deployment's sources gone with it", func() bool {
		_, err := second.deps.sources.Load(uid)
		return len(second.ListPods("").Items) == 0 && errors.Is(err, errdefs.ErrNotFound)
	})
}
