package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const volumesPod = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello, mode: fast}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: vols, labels: {app: vols, tier: test}}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 16Mi}}
  - {name: host, hostPath: {path: HOSTDIR, type: Directory}}
  - name: cm
    configMap: {name: settings, items: [{key: greeting, path: greeting.txt}], defaultMode: 0440}
  - {name: secret, secret: {secretName: creds}}
  - name: downward
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: name, fieldRef: {fieldPath: metadata.name}}
  - name: all
    projected:
      sources:
      - configMap: {name: settings, items: [{key: mode, path: mode}]}
      - secret: {name: creds, items: [{key: password, path: pw}]}
      - downwardAPI: {items: [{path: ns, fieldRef: {fieldPath: metadata.namespace}}]}
  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
    - {name: host, mountPath: /host}
    - {name: cm, mountPath: /cm}
    - {name: secret, mountPath: /secret, readOnly: true}
    - {name: downward, mountPath: /downward}
    - {name: all, mountPath: /all}
`

// Every volume kind the agent builds, seen from inside the container, and
// a ConfigMap change reaching its volume without a restart.
func TestEveryVolumeKind(t *testing.T) { onEachRuntime(t, everyVolumeKind) }

func everyVolumeKind(t *testing.T, n *node) {
	hostDir := t.TempDir()
	manifest := strings.ReplaceAll(volumesPod, "HOSTDIR", hostDir)
	n.apply("vols.yaml", manifest)
	n.waitPod("vols", "running", running("app"))

	checks := map[string]string{
		"cat /cm/greeting.txt":                                "hello",
		"stat -L -c %a /cm/greeting.txt":                      "440",
		"cat /secret/password":                                "s3cret",
		"cat /downward/name":                                  "vols",
		"cat /downward/labels":                                "app=\"vols\"\ntier=\"test\"",
		"cat /all/mode; echo; cat /all/pw; echo; cat /all/ns": "fast\ns3cret\ndefault",
		"grep -c ' /mem tmpfs ' /proc/mounts":                 "1",
		"echo hi > /scratch/f && cat /scratch/f":              "hi",
		"echo from-pod > /host/out && cat /host/out":          "from-pod",
	}
	for cmd, want := range checks {
		out, err := n.exec("vols", "app", "sh", "-c", cmd)
		if err != nil || strings.TrimSpace(out) != want {
			t.Errorf("%s: %q, %v; want %q", cmd, out, err, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(hostDir, "out")); err != nil || string(data) != "from-pod\n" {
		t.Errorf("hostPath file on the host: %q, %v", data, err)
	}

	uid := n.pod("vols").UID
	updated := strings.Replace(manifest, "greeting: hello", "greeting: bonjour", 1)
	if out := n.apply("vols.yaml", updated); !strings.Contains(out, "configmap/settings configured") || !strings.Contains(out, "pod/vols unchanged") {
		t.Errorf("apply of a changed ConfigMap: %q; want the ConfigMap configured and the pod unchanged", out)
	}
	n.waitExec("vols", "app", "the ConfigMap volume shows the new value", func(s string) bool { return s == "bonjour" },
		"cat", "/cm/greeting.txt")
	pod := n.pod("vols")
	if pod.UID != uid || containerStatus(pod, "app").RestartCount != 0 {
		t.Errorf("a ConfigMap change replaced or restarted the pod (uid %s → %s, restarts %d)", uid, pod.UID, containerStatus(pod, "app").RestartCount)
	}
	if n.pod("vols").Status.Phase != v1.PodRunning {
		t.Errorf("pod not running after the update")
	}
}
