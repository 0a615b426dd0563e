package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

const skippedYAML = `apiVersion: v1
kind: Namespace
metadata: {name: default}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: web}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec: {defaultBackend: {service: {name: web, port: {number: 80}}}}
`

// Skipped kinds come back first, each with its reason, on every apply
// (never "unchanged": nothing of them is kept); the pod beside them, with a
// serviceAccountName and a priorityClassName no one defines, runs.
func TestApplyReportsSkippedObjects(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	pod := "---\napiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  serviceAccountName: web\n  priorityClassName: high\n" +
		"  containers: [{name: app, image: busybox, imagePullPolicy: IfNotPresent, command: [sleep, '1000']}]\n"
	for range 2 {
		resp := a.apply(t, skippedYAML+pod)
		want := []agentapi.ApplyResult{
			{APIVersion: "v1", Kind: "Namespace", Name: "default", Outcome: agentapi.OutcomeSkipped},
			{APIVersion: "v1", Kind: "ServiceAccount", Namespace: "default", Name: "web", Outcome: agentapi.OutcomeSkipped},
			{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: "default", Name: "web", Outcome: agentapi.OutcomeSkipped},
		}
		if len(resp.Objects) != 4 || resp.Objects[3].Kind != agentapi.KindPod {
			t.Fatalf("results %+v; want 3 skipped, then the pod", resp.Objects)
		}
		for i, w := range want {
			got := resp.Objects[i]
			if got.Message == "" {
				t.Errorf("result %d: no reason: %+v", i, got)
			}
			got.Message = ""
			if got != w {
				t.Errorf("result %d: %+v; want %+v", i, got, w)
			}
		}
	}
	waitFor(t, "the pod runs", func() bool { return ctrStatus(a.pod(t, "web"), "app").State.Running != nil })
}

// A watched directory of pods stays watched when it also holds skipped
// kinds; its first answer reports them.
func TestWatchedDirectoryWithSkippedKinds(t *testing.T) {
	a := startTestAgent(t, criclienttest.New())
	dir := manifestDir(t, "static")
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(skippedYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := a.Apply(context.Background(), agentapi.ApplyRequest{WatchDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var skipped, pods int
	for _, r := range resp.Objects {
		switch {
		case r.Outcome == agentapi.OutcomeSkipped:
			skipped++
		case r.Kind == agentapi.KindPod && r.Outcome == agentapi.OutcomeCreated:
			pods++
		}
	}
	if skipped != 3 || pods != 1 {
		t.Errorf("results %+v; want 3 skipped and 1 pod created", resp.Objects)
	}
	if got := a.watched(); len(got) != 1 || got[0] != dir {
		t.Errorf("watches %v; want [%s]", got, dir)
	}
	waitFor(t, "the static pod runs", func() bool {
		p := a.pod(t, "static")
		return p.Status.Phase == v1.PodRunning
	})
}
