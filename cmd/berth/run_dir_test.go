package main

import (
	"io"
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

	reqs, err := loadRequests([]string{pods}, nil, io.Discard)
	if err != nil || len(reqs) != 1 || reqs[0].WatchDir != pods || reqs[0].Bundle != nil {
		t.Fatalf("a directory of pods: %+v %v; want one watch request", reqs, err)
	}
	reqs, err = loadRequests([]string{app}, nil, io.Discard)
	if err != nil || len(reqs) != 1 || reqs[0].WatchDir != app || reqs[0].Bundle != nil {
		t.Fatalf("a directory with workloads: %+v %v; want one watch request", reqs, err)
	}
	reqs, err = loadRequests([]string{app, pods, filepath.Join(app, "web.yaml")}, nil, io.Discard)
	if err != nil || len(reqs) != 3 || reqs[0].Bundle == nil || len(reqs[0].Bundle.Deployments) != 1 || reqs[1].WatchDir != app || reqs[2].WatchDir != pods {
		t.Errorf("both directories and a file: %+v %v; want the file's bundle, then the watches", reqs, err)
	}
	// A directory is validated on its own: a file that fails names itself.
	writeTestFile(t, filepath.Join(app, "bad.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bad}\nspec: {replicas: -1}\n")
	if _, err := loadRequests([]string{app}, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("a directory with an invalid file: %v; want an error naming it", err)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A directory the agent would refuse to watch (writable by others: a
// user's checkout, a shared directory) is applied once with the files, and
// the note says why and how to apply its changes.
func TestLoadRequestsAppliesAnUntrustedDirectoryOnce(t *testing.T) {
	app := t.TempDir()
	writeTestFile(t, filepath.Join(app, "web.yaml"), dirTestDeployment)
	if err := os.Chmod(app, 0o777); err != nil {
		t.Fatal(err)
	}
	var notes strings.Builder
	reqs, err := loadRequests([]string{app}, nil, &notes)
	if err != nil || len(reqs) != 1 || reqs[0].WatchDir != "" || reqs[0].Bundle == nil || len(reqs[0].Bundle.Deployments) != 1 {
		t.Fatalf("%+v %v; want one bundle with the Deployment", reqs, err)
	}
	if want := app + " is applied once, not watched"; !strings.Contains(notes.String(), want) || !strings.Contains(notes.String(), "berth apply -f "+app) {
		t.Errorf("note %q; want %q and how to apply a change", notes.String(), want)
	}
}
