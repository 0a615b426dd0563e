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

// A directory is watched, whether it holds pods only or workloads and
// Services too; files are merged into one bundle.
func TestLoadRequestsDirectories(t *testing.T) {
	pods, app := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(pods, "pod.yaml"), dirTestPod)
	writeTestFile(t, filepath.Join(app, "web.yaml"), dirTestDeployment)
	writeTestFile(t, filepath.Join(app, "pod.yaml"), dirTestPod)

	reqs, err := loadRequests([]string{pods}, nil)
	if err != nil || len(reqs) != 1 || reqs[0].WatchDir != pods || reqs[0].Bundle != nil {
		t.Fatalf("a directory of pods: %+v %v; want one watch request", reqs, err)
	}
	reqs, err = loadRequests([]string{app}, nil)
	if err != nil || len(reqs) != 1 || reqs[0].WatchDir != app || reqs[0].Bundle != nil {
		t.Fatalf("a directory with workloads: %+v %v; want one watch request", reqs, err)
	}
	reqs, err = loadRequests([]string{app, pods, filepath.Join(app, "web.yaml")}, nil)
	if err != nil || len(reqs) != 3 || reqs[0].Bundle == nil || len(reqs[0].Bundle.Deployments) != 1 || reqs[1].WatchDir != app || reqs[2].WatchDir != pods {
		t.Errorf("both directories and a file: %+v %v; want the file's bundle, then the watches", reqs, err)
	}
	// A directory is validated on its own: a file that fails names itself.
	writeTestFile(t, filepath.Join(app, "bad.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad}\nspec: {replicas: -1}\n")
	if _, err := loadRequests([]string{app}, nil); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("a directory with an invalid file: %v; want an error naming it", err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
