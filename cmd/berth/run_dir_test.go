package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const dirTestPod = `apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers: [{name: app, image: busybox, command: [sleep, "60"]}]
`

const dirTestDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: busybox, command: [sleep, "60"]}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`

// A directory of pods is watched; one holding workloads or Services is
// applied once (as kubectl apply -f DIR), with a note saying so.
func TestLoadRequestsDirectories(t *testing.T) {
	pods, app := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(pods, "pod.yaml"), dirTestPod)
	writeTestFile(t, filepath.Join(app, "web.yaml"), dirTestDeployment)
	writeTestFile(t, filepath.Join(app, "pod.yaml"), dirTestPod)

	var notes strings.Builder
	reqs, err := loadRequests([]string{pods}, nil, &notes)
	if err != nil || len(reqs) != 1 || reqs[0].WatchDir != pods || reqs[0].Bundle != nil || notes.Len() != 0 {
		t.Fatalf("a directory of pods: %+v %v, notes %q; want one watch request", reqs, err, notes.String())
	}

	reqs, err = loadRequests([]string{app}, nil, &notes)
	if err != nil || len(reqs) != 1 || reqs[0].WatchDir != "" || reqs[0].Bundle == nil {
		t.Fatalf("a directory with workloads: %+v %v; want one bundle", reqs, err)
	}
	b := reqs[0].Bundle
	if len(b.Deployments) != 1 || len(b.Services) != 1 || len(b.Pods) != 1 {
		t.Errorf("bundle: %d deployments, %d services, %d pods; want 1 each", len(b.Deployments), len(b.Services), len(b.Pods))
	}
	if !strings.Contains(notes.String(), app+": applied once, not watched") {
		t.Errorf("notes: %q", notes.String())
	}

	notes.Reset()
	reqs, err = loadRequests([]string{app, pods}, nil, &notes)
	if err != nil || len(reqs) != 2 || reqs[0].Bundle == nil || reqs[1].WatchDir != pods {
		t.Errorf("both: %+v %v; want the bundle, then the watch", reqs, err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
