package e2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// $(VAR) expansion in env, command and args, and every valueFrom kind.
func TestEnvExpansionAndValueFrom(t *testing.T) { onEachRuntime(t, envExpansionAndValueFrom) }

func envExpansionAndValueFrom(t *testing.T, n *node) {
	n.apply("env.yaml", `
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {color: blue, size: large}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret}
stringData: {token: t0k3n}
---
apiVersion: v1
kind: Pod
metadata: {name: envs}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c]
    args: ["echo greeting=$(GREETING) escaped='$$(GREETING)'; env | grep -E '^(GREETING|FULL|COLOR|TOKEN|POD_NAME|POD_IP|MEM_LIMIT|CFG_size|UNDEFINED)=' | sort; exec sleep 3600"]
    envFrom:
    - {prefix: CFG_, configMapRef: {name: app-config}}
    env:
    - {name: GREETING, value: hello}
    - {name: FULL, value: "$(GREETING)-world-$(MISSING)"}
    - {name: COLOR, valueFrom: {configMapKeyRef: {name: app-config, key: color}}}
    - {name: TOKEN, valueFrom: {secretKeyRef: {name: app-secret, key: token}}}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MEM_LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    resources:
      limits: {memory: 64Mi}
`)
	pod := n.waitPod("envs", "running", running("app"))
	n.waitExec("envs", "app", "the app wrote its environment", func(string) bool {
		return strings.Contains(n.must("logs", "envs"), "TOKEN=")
	}, "true")
	logs := n.must("logs", "envs")
	want := []string{
		"greeting=hello escaped=$(GREETING)",
		"CFG_size=large", "COLOR=blue", "FULL=hello-world-$(MISSING)", "GREETING=hello",
		"MEM_LIMIT=64", "POD_IP=" + pod.Status.PodIP, "POD_NAME=envs", "TOKEN=t0k3n",
	}
	for _, line := range want {
		if !strings.Contains(logs, line+"\n") {
			t.Errorf("logs lack %q:\n%s", line, logs)
		}
	}
	if pod.Status.PodIP == "" || pod.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("pod IP %q, QoS %q; want an IP and Burstable", pod.Status.PodIP, pod.Status.QOSClass)
	}
}
