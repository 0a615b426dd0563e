package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// webManifests is a realistic application in the style of the Kubernetes
// docs: a ConfigMap and a Secret, and a pod with an init container, a
// sidecar (an init container with restartPolicy Always), probes, a hook,
// resources, env from both objects and a configMap volume.
const webManifests = `# web application
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  nginx.conf: |
    server { listen 8080; }
  log_level: info
---
apiVersion: v1
kind: Secret
metadata:
  name: web-secret
stringData:
  password: s3cret
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  initContainers:
  - name: init-config
    image: busybox:1.36
    command: ["sh", "-c", "cp /config/nginx.conf /work/"]
    volumeMounts:
    - name: config
      mountPath: /config
    - name: work
      mountPath: /work
  - name: log-shipper
    image: busybox:1.36
    restartPolicy: Always
    command: ["sh", "-c", "tail -F /logs/access.log"]
    volumeMounts:
    - name: logs
      mountPath: /logs
    readinessProbe:
      exec:
        command: ["true"]
  containers:
  - name: app
    image: nginx:1.27
    ports:
    - name: http
      containerPort: 8080
    env:
    - name: LOG_LEVEL
      valueFrom:
        configMapKeyRef:
          name: web-config
          key: log_level
    - name: PASSWORD
      valueFrom:
        secretKeyRef:
          name: web-secret
          key: password
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    resources:
      requests:
        cpu: 100m
        memory: 64Mi
      limits:
        memory: 128Mi
    livenessProbe:
      httpGet:
        path: /healthz
        port: http
      initialDelaySeconds: 3
    readinessProbe:
      tcpSocket:
        port: 8080
    lifecycle:
      preStop:
        exec:
          command: ["nginx", "-s", "quit"]
    volumeMounts:
    - name: work
      mountPath: /etc/nginx/conf.d
    - name: logs
      mountPath: /var/log/nginx
  volumes:
  - name: config
    configMap:
      name: web-config
      items:
      - key: nginx.conf
        path: nginx.conf
  - name: work
    emptyDir: {}
  - name: logs
    emptyDir: {}
`

// minimalPod has no references, for cases that change its namespace.
const minimalPod = `apiVersion: v1
kind: Pod
metadata:
  name: solo
spec:
  containers:
  - name: main
    image: busybox
    command: ["sleep", "3600"]
`

// decodeString decodes manifests as if read from source, failing the test on error.
func decodeString(t *testing.T, manifests, source string) *Bundle {
	t.Helper()
	b, err := Decode(strings.NewReader(manifests), source)
	if err != nil {
		t.Fatalf("Decode(%s): %v", source, err)
	}
	return b
}

// decodeError decodes manifests that must not decode and returns the error text.
func decodeError(t *testing.T, manifests, source string) string {
	t.Helper()
	b, err := Decode(strings.NewReader(manifests), source)
	if err == nil {
		t.Fatalf("Decode(%s) = %d pods, want an error", source, len(b.Pods))
	}
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Decode(%s) error is %T, want *InvalidError: %v", source, err, err)
	}
	return err.Error()
}

// onlyPod returns the single pod of b.
func onlyPod(t *testing.T, b *Bundle) *v1.Pod {
	t.Helper()
	if len(b.Pods) != 1 {
		t.Fatalf("bundle has %d pods, want 1", len(b.Pods))
	}
	return b.Pods[0].Pod
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// podYAML makes a minimal pod manifest named name.
func podYAML(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: main\n    image: " + image + "\n"
}
