package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// webDeployment runs 3 replicas that become ready once they wrote their
// version; sleep ignores SIGTERM as pid 1, so the grace period is short.
const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy: {rollingUpdate: {maxUnavailable: 1, maxSurge: 1}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: web
        image: busybox:latest
        command: [sh, -c, 'echo "$VERSION" > /tmp/version; exec sleep 3600']
        env: [{name: VERSION, value: "1"}]
        readinessProbe: {exec: {command: [cat, /tmp/version]}, periodSeconds: 1}
`

// testDeployment rolls a Deployment to a new template and scales it; berth
// must end with exactly the sandboxes the Deployment wants.
func (c *cluster) testDeployment(t *testing.T) {
	c.apply(t, webDeployment)
	c.kubectlT(t, "rollout", "status", "deployment/web", "--timeout=3m")
	c.waitPods(t, "app=web", 3)
	c.kubectlT(t, "set", "env", "deployment/web", "VERSION=2")
	c.kubectlT(t, "rollout", "status", "deployment/web", "--timeout=3m")
	c.waitPods(t, "app=web", 3)
	for _, pod := range strings.Fields(c.kubectlT(t, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}")) {
		if v := c.kubectlT(t, "exec", pod, "--", "cat", "/tmp/version"); v != "2" {
			t.Errorf("pod %s after the rollout has version %q, want 2", pod, v)
		}
	}
	c.kubectlT(t, "scale", "deployment/web", "--replicas=5")
	c.kubectlT(t, "rollout", "status", "deployment/web", "--timeout=3m")
	c.waitPods(t, "app=web", 5)
	c.kubectlT(t, "scale", "deployment/web", "--replicas=1")
	c.waitPods(t, "app=web", 1)
	c.kubectlT(t, "delete", "deployment/web")
	c.waitPods(t, "app=web", 0)
}

// waitPods waits until the API server lists n pods with the label
// selector and berth holds exactly n ready sandboxes with those labels.
func (c *cluster) waitPods(t *testing.T, selector string, n int) {
	t.Helper()
	key, value, _ := strings.Cut(selector, "=")
	c.waitFor(t, fmt.Sprintf("%d pods %s in the API and in berth", n, selector), 3*time.Minute, func() bool {
		out, err := c.try("get", "pods", "-l", selector, "-o", "jsonpath={.items[*].metadata.name}")
		if err != nil || len(strings.Fields(out)) != n {
			return false
		}
		return len(c.readySandboxes(map[string]string{key: value})) == n
	})
}

// readySandboxes lists berth's ready sandboxes with these labels.
func (c *cluster) readySandboxes(labels map[string]string) []*runtimeapi.PodSandbox {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.berth.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: labels,
	}})
	if err != nil {
		c.t.Fatalf("ListPodSandbox: %v", err)
	}
	for _, sb := range resp.GetItems() {
		c.berth.KnownPodUIDs[sb.GetMetadata().GetUid()] = true
	}
	return resp.GetItems()
}

const countJob = `apiVersion: batch/v1
kind: Job
metadata: {name: count}
spec:
  completions: 3
  parallelism: 2
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: count, image: 'busybox:latest', imagePullPolicy: IfNotPresent, command: [sh, -c, 'echo counted']}
`

// testJob runs a Job of three completions to its end.
func (c *cluster) testJob(t *testing.T) {
	c.apply(t, countJob)
	c.kubectlT(t, "wait", "--for=condition=Complete", "job/count", "--timeout=3m")
	if n := c.kubectlT(t, "get", "job/count", "-o", "jsonpath={.status.succeeded}"); n != "3" {
		t.Errorf("job count succeeded %s times, want 3", n)
	}
	if out := c.kubectlT(t, "logs", "job/count"); out != "counted" {
		t.Errorf("logs of job/count = %q, want counted", out)
	}
	c.kubectlT(t, "delete", "job/count", "--cascade=foreground")
}

// lifecyclePod has an init container, a sidecar serving HTTP (an init
// container with restartPolicy Always, ready through a startup probe), a
// main container that needs both, with a readiness probe and postStart and
// preStop hooks (preStop writes into a host directory, HOSTDIR), and a
// container whose liveness probe fails once /tmp/broken exists.
const lifecyclePod = `apiVersion: v1
kind: Pod
metadata: {name: lifecycle}
spec:
  terminationGracePeriodSeconds: 10
  volumes:
  - {name: work, emptyDir: {}}
  - {name: host, hostPath: {path: HOSTDIR, type: Directory}}
  initContainers:
  - name: init
    image: busybox:latest
    command: [sh, -c, 'echo init > /work/init']
    volumeMounts: [{name: work, mountPath: /work}]
  - name: sidecar
    image: busybox:latest
    restartPolicy: Always
    command: [sh, -c, 'mkdir -p /work/www && echo sidecar-ok > /work/www/index.html && exec httpd -f -p 8080 -h /work/www']
    volumeMounts: [{name: work, mountPath: /work}]
    startupProbe: {httpGet: {path: /index.html, port: 8080}, periodSeconds: 1, failureThreshold: 60}
  containers:
  - name: main
    image: busybox:latest
    command: [sh, -c, 'test -f /work/init && wget -q -O /work/fetched http://127.0.0.1:8080/index.html && exec sleep 3600']
    volumeMounts: [{name: work, mountPath: /work}, {name: host, mountPath: /host}]
    readinessProbe: {exec: {command: [test, -f, /work/fetched]}, periodSeconds: 1}
    lifecycle:
      postStart: {exec: {command: [sh, -c, 'echo started > /work/poststart']}}
      preStop: {exec: {command: [sh, -c, 'echo stopping > /host/prestop']}}
  - name: flaky
    image: busybox:latest
    command: [sleep, '3600']
    livenessProbe: {exec: {command: [sh, -c, 'test ! -f /tmp/broken']}, periodSeconds: 1, failureThreshold: 1}
`

// testLifecycle checks the order of init containers and sidecar, probes
// and hooks.
func (c *cluster) testLifecycle(t *testing.T) {
	hostDir := t.TempDir()
	c.apply(t, strings.Replace(lifecyclePod, "HOSTDIR", hostDir, 1))
	c.kubectlT(t, "wait", "--for=condition=Ready", "pod/lifecycle", "--timeout=3m")
	if n := c.restarts(t, "lifecycle", "main"); n != "0" {
		t.Errorf("main restarted %s times: it started before the init container or the sidecar was serving", n)
	}
	if out := c.kubectlT(t, "exec", "lifecycle", "-c", "main", "--", "cat", "/work/poststart", "/work/fetched"); out != "started\nsidecar-ok" {
		t.Errorf("postStart hook and sidecar: got %q", out)
	}
	c.kubectlT(t, "exec", "lifecycle", "-c", "flaky", "--", "touch", "/tmp/broken")
	c.waitFor(t, "the liveness probe to restart flaky", 2*time.Minute, func() bool { return c.restarts(t, "lifecycle", "flaky") == "1" })
	c.kubectlT(t, "wait", "--for=condition=Ready", "pod/lifecycle", "--timeout=2m")
	c.kubectlT(t, "delete", "pod/lifecycle", "--timeout=2m")
	if b, err := os.ReadFile(filepath.Join(hostDir, "prestop")); err != nil || string(b) != "stopping\n" {
		t.Errorf("preStop hook: %q, %v", b, err)
	}
}

// restarts is the restart count of a container of a pod.
func (c *cluster) restarts(t *testing.T, pod, container string) string {
	return c.kubectlT(t, "get", "pod", pod, "-o",
		fmt.Sprintf(`jsonpath={.status.containerStatuses[?(@.name=="%s")].restartCount}`, container))
}
