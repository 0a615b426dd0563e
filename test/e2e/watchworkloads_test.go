package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// watchedDeploymentYAML is a Deployment of two pods that print VALUE,
// then sleep.
func watchedDeploymentYAML(name, value string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: ` + name + `}
spec:
  replicas: 2
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, "echo $VALUE; exec sleep 3600"]
        env: [{name: VALUE, value: "` + value + `"}]
`
}

const watchedServiceYAML = `---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

// `berth run -d -f DIR` of a directory with a Deployment and a Service
// watches it: a changed env in the file rolls a new ReplicaSet out; a file
// added with a second Deployment brings it up, its removal takes it and
// its pods away; `berth delete -f DIR` deletes everything.
func TestWatchedDirectoryOfWorkloads(t *testing.T) {
	onEachRuntimeWith(t, watchedDirectoryOfWorkloads)
}

func watchedDirectoryOfWorkloads(t *testing.T, start func(...string) *node) {
	third, iface := 220, "bte2ewdir-b"
	if strings.HasSuffix(t.Name(), "/containerd") { // they run side by side
		third, iface = 221, "bte2ewdir-c"
	}
	t.Cleanup(func() { checkNoInterface(t, iface) }) // after the node's teardown
	n := start(fmt.Sprintf("--service-cluster-ip-range=10.96.%d.0/24", third), "--service-interface="+iface,
		"--cluster-dns-upstream="+upstreamDNS(t))
	dir := t.TempDir()
	n.watched = append(n.watched, dir)
	writeFile(t, filepath.Join(dir, "web.yaml"), watchedDeploymentYAML("web", "one")+watchedServiceYAML)
	out := n.must("run", "-d", "-f", dir)
	for _, want := range []string{"deployment.apps/web created", "service/web created"} {
		if !strings.Contains(out, want) {
			t.Errorf("run -d -f DIR: no %q in\n%s", want, out)
		}
	}
	n.waitDeployment("2 web pods available", func(d *appsv1.Deployment) bool { return d.Status.AvailableReplicas == 2 })

	writeFile(t, filepath.Join(dir, "web.yaml"), watchedDeploymentYAML("web", "two")+watchedServiceYAML)
	n.waitDeployment("the changed template rolled out", func(d *appsv1.Deployment) bool {
		s := d.Status
		return d.Generation == 2 && s.ObservedGeneration == 2 && s.UpdatedReplicas == 2 && s.Replicas == 2 && s.AvailableReplicas == 2
	})
	detail, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceDeployment, "default", "web")
	if err != nil || len(detail.ReplicaSets) != 2 {
		t.Errorf("web's ReplicaSets after the change: %v; want the old and the new", err)
	}
	for name := range n.ownedPods() {
		if logs := n.must("logs", name); logs != "two\n" {
			t.Errorf("pod %s logs %q; want the new value", name, logs)
		}
	}

	writeFile(t, filepath.Join(dir, "api.yaml"), watchedDeploymentYAML("api", "api"))
	waitFor(t, "api's 2 pods running", func() bool { return len(podsNamed(n, "api-", running("app"))) == 2 })
	if err := os.Remove(filepath.Join(dir, "api.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "api and its pods gone", func() bool {
		_, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceDeployment, "default", "api")
		return err != nil && len(podsNamed(n, "api-", func(v1.Pod) bool { return true })) == 0
	})
	if got := len(podsNamed(n, "web-", readyPod)); got != 2 {
		t.Errorf("web pods ready after api went: %d; want 2", got)
	}

	out = n.must("delete", "-f", dir)
	for _, want := range []string{`deployment.apps "web" deleted`, `service "web" deleted`} {
		if !strings.Contains(out, want) {
			t.Errorf("delete -f DIR: no %q in\n%s", want, out)
		}
	}
	n.waitNoPods()
	for _, kind := range []string{"deploy", "rs", "svc"} {
		if out, errOut, err := n.berth("get", kind); err != nil || out != "" || !strings.Contains(errOut, "No resources found") {
			t.Errorf("get %s after delete -f: %q %q %v", kind, out, errOut, err)
		}
	}
}

// podsNamed lists the pods whose name starts with prefix and that pass ok.
func podsNamed(n *node, prefix string, ok func(v1.Pod) bool) []v1.Pod {
	var out []v1.Pod
	for _, p := range n.podList() {
		if strings.HasPrefix(p.Name, prefix) && ok(p) {
			out = append(out, p)
		}
	}
	return out
}
