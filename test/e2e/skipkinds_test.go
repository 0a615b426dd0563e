package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// realApp is the realistic application manifest of the manifest
// package's tests (Namespace shop, ServiceAccount, a Deployment with
// serviceAccountName, priorityClassName high, pod anti-affinity and
// topology spread, a Service, an Ingress, a PodDisruptionBudget and a
// HorizontalPodAutoscaler), its busybox serving a page on 8080 as uid 1000
// from the read-only root's /tmp emptyDir, the local image kept.
func realApp(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../internal/agent/manifest/testdata/realapp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	app := strings.Replace(string(data), "        image: busybox\n", `        image: busybox
        imagePullPolicy: IfNotPresent
        command: [sh, -c, "mkdir -p /tmp/www && echo hello-from-$(hostname) > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
`, 1)
	if app == string(data) {
		t.Fatal("realapp.yaml: no busybox container to serve with")
	}
	return app
}

// The realistic app runs unchanged: `berth run -f` reports its cluster
// objects skipped (stdout) with a Warning each (stderr) and rolls the
// Deployment out in namespace shop; the pods run with their
// serviceAccountName and priorityClassName and no token mounted; the
// Service answers on its ClusterIP; `apply -f` again leaves it all as it
// is and skips again; `delete -f` deletes the Deployment, its pods and the
// Service and skips the rest.
func TestRealAppWithClusterKinds(t *testing.T) {
	onEachRuntimeWith(t, realAppWithClusterKinds)
}

func realAppWithClusterKinds(t *testing.T, start func(...string) *node) {
	third, iface := 210, "bte2eskip-b"
	if strings.HasSuffix(t.Name(), "/containerd") { // they run side by side
		third, iface = 211, "bte2eskip-c"
	}
	t.Cleanup(func() { checkNoInterface(t, iface) }) // after the node's teardown
	n := start(fmt.Sprintf("--service-cluster-ip-range=10.96.%d.0/24", third), "--service-interface="+iface,
		"--cluster-dns-upstream="+upstreamDNS(t))
	path := n.write("app.yaml", realApp(t))
	skips := []string{"namespace/shop skipped", "serviceaccount/web skipped", "ingress.networking.k8s.io/web skipped",
		"poddisruptionbudget.policy/web skipped", "horizontalpodautoscaler.autoscaling/web skipped"}

	run := n.background("run", "-f", path)
	run.waitOutput("the Deployment applied", nil, "deployment.apps/web created")
	pods := n.waitShopPods(2)
	out := run.waitOutput("the Deployment followed", nil, `deployment "web" successfully rolled out`)
	run.kill()
	for _, want := range append(skips, "deployment.apps/web created", "service/web created",
		"Warning: ingress.networking.k8s.io/web skipped: no ingress controller on a berth node",
		"Warning: namespace/shop skipped: berth keeps no Namespace objects") {
		if !strings.Contains(out, want) {
			t.Errorf("run -f: no %q in\n%s", want, out)
		}
	}
	for _, p := range pods {
		if p.Spec.ServiceAccountName != "web" || p.Spec.PriorityClassName != "high" {
			t.Errorf("pod %s: serviceAccountName %q, priorityClassName %q; want web, high", p.Name, p.Spec.ServiceAccountName, p.Spec.PriorityClassName)
		}
		if got, errOut, err := n.berth("exec", "-n", "shop", p.Name, "-c", "web", "--", "id", "-u"); err != nil || strings.TrimSpace(got) != "1000" {
			t.Errorf("pod %s: id -u: %q %v %s; want 1000", p.Name, got, err, errOut)
		}
		// As for kubelet's static pods: no API server, no token.
		if got, _, err := n.berth("exec", "-n", "shop", p.Name, "-c", "web", "--", "ls", "/var/run/secrets/kubernetes.io/serviceaccount"); err == nil {
			t.Errorf("pod %s: a service account token directory is mounted: %q", p.Name, got)
		}
	}
	svc, err := n.client.DescribeWorkload(context.Background(), agentapi.ResourceService, "shop", "web")
	if err != nil {
		t.Fatal(err)
	}
	clusterIP := svc.Service.Spec.ClusterIP
	getFromHost(t, clusterIP+":80", "hello-from-web-")

	stdout, stderr, err := n.berth("apply", "-f", path)
	for _, want := range append(skips, "deployment.apps/web unchanged", "service/web unchanged") {
		if err != nil || !strings.Contains(stdout, want) {
			t.Errorf("apply -f again: no %q in\n%s (%v)", want, stdout, err)
		}
	}
	if n := strings.Count(stderr, "Warning: "); n != len(skips) {
		t.Errorf("apply -f again: %d warnings; want %d:\n%s", n, len(skips), stderr)
	}

	out = n.must("delete", "-f", path)
	for _, want := range []string{`deployment.apps "web" deleted`, `service "web" deleted`, `namespace "shop" skipped`,
		`ingress.networking.k8s.io "web" skipped`, `horizontalpodautoscaler.autoscaling "web" skipped`} {
		if !strings.Contains(out, want) {
			t.Errorf("delete -f: no %q in\n%s", want, out)
		}
	}
	waitFor(t, "no pod left in shop", func() bool {
		list, err := n.client.ListPods(context.Background(), "shop")
		return err == nil && len(list.Items) == 0
	})
	for _, kind := range []string{"deploy", "svc"} {
		if out, errOut, err := n.berth("get", kind, "-n", "shop"); err != nil || out != "" || !strings.Contains(errOut, "No resources found") {
			t.Errorf("get %s -n shop after delete -f: %q %q %v", kind, out, errOut, err)
		}
	}
}

// waitShopPods waits until namespace shop has want pods, all ready, and
// returns them.
func (n *node) waitShopPods(want int) []v1.Pod {
	n.t.Helper()
	var pods []v1.Pod
	deadline := time.Now().Add(90 * time.Second)
	for {
		list, err := n.client.ListPods(context.Background(), "shop")
		ready := 0
		if err == nil {
			pods = list.Items
			for i := range pods {
				n.remember(&pods[i])
				if readyPod(pods[i]) {
					ready++
				}
			}
		}
		if err == nil && len(pods) == want && ready == want {
			return pods
		}
		if time.Now().After(deadline) {
			out, _, _ := n.berth("get", "pods", "-n", "shop")
			n.t.Fatalf("namespace shop: %d pods, %d ready (%v); want %d ready\n%s\n%s", len(pods), ready, err, want, out, n.rt.logTail(40))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// getFromHost GETs http://addr/ from the host until the body holds want.
func getFromHost(t *testing.T, addr, want string) {
	t.Helper()
	waitFor(t, "GET "+addr+" from the host", func() bool {
		c := &http.Client{Timeout: 3 * time.Second}
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), want)
	})
}
