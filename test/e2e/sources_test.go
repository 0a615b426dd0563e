package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// bigSourcesPod uses five ConfigMaps of 1 MB each and a Secret (mounted
// and in env). Its container notes the Secret's value from its env at
// each start, and exits 1 when /scratch/crash appears.
func bigSourcesPod(secret string) string {
	var b strings.Builder
	blob := strings.Repeat("x", 1_000_000)
	for i := range 5 {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big-%d}\ndata: {blob: %s}\n---\n", i, blob)
	}
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: %s}\n---\n", secret)
	b.WriteString(`apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: creds, secret: {secretName: creds}}
`)
	for i := range 5 {
		fmt.Fprintf(&b, "  - {name: big-%d, configMap: {name: big-%d}}\n", i, i)
	}
	b.WriteString(`  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, 'echo "$PASSWORD" >> /scratch/pw; while [ ! -f /scratch/crash ]; do sleep 0.2; done; rm /scratch/crash; exit 1']
    env: [{name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: password}}}]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: creds, mountPath: /creds}
`)
	for i := range 5 {
		fmt.Fprintf(&b, "    - {name: big-%d, mountPath: /big-%d}\n", i, i)
	}
	return b.String()
}

// 5 MB of ConfigMaps and a Secret: the pod runs and reads them, the CRI
// never shows the Secret's value nor carries the sources, and after kill -9
// of the agent (of berth serve, on berth) it finds the sources again (a crashed container is
// started again with the Secret in its env and its volumes intact).
func TestLargeSourcesAndSecretsStayOutOfCRI(t *testing.T) {
	onEachRuntime(t, largeSourcesAndSecretsStayOutOfCRI)
}

func largeSourcesAndSecretsStayOutOfCRI(t *testing.T, n *node) {
	secret := "e2e-" + harness.RandomHex(12)
	n.apply("big.yaml", bigSourcesPod(secret))
	n.waitPod("big", "running", running("app"))
	n.checkSources(secret, "1 MB in every ConfigMap volume, the Secret in its volume and env")
	checkCRIKeepsSecret(t, n, secret)
	uid := string(n.pod("big").UID)
	record := filepath.Join(n.rt.agentRoot(), "agent", "sources", uid+".json")
	for path, want := range map[string]os.FileMode{filepath.Dir(record): 0o700, record: 0o600} {
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: %v; want mode %04o", path, err, want)
		}
	}

	n.restartAgent()
	before := containerStatus(n.pod("big"), "app")
	if _, err := n.exec("big", "app", "touch", "/scratch/crash"); err != nil {
		t.Fatal(err)
	}
	n.waitPod("big", "started again after its crash under the new agent", func(p v1.Pod) bool {
		st := containerStatus(p, "app")
		return st.RestartCount == 1 && st.State.Running != nil && st.ContainerID != before.ContainerID
	})
	if n.hasEvent("big", "SourcesNotFound") {
		t.Error("the restarted agent did not find the pod's sources")
	}
	n.checkSources(secret, "the same after the restart")
	if out, err := n.exec("big", "app", "cat", "/scratch/pw"); err != nil || out != secret+"\n"+secret+"\n" {
		t.Errorf("the Secret in env at each start: %q, %v; want it twice", out, err)
	}
	checkCRIKeepsSecret(t, n, secret)
}

// checkSources reads the pod's ConfigMap and Secret volumes and env.
func (n *node) checkSources(secret, what string) {
	n.t.Helper()
	cmd := "for i in 0 1 2 3 4; do wc -c < /big-$i/blob; done; cat /creds/password; echo; echo $PASSWORD"
	want := strings.Repeat("1000000\n", 5) + secret + "\n" + secret + "\n"
	if out, err := n.exec("big", "app", "sh", "-c", cmd); err != nil || out != want {
		n.t.Errorf("%s: %q, %v; want %q", what, out, err, want)
	}
}

// checkCRIKeepsSecret fails when a CRI listing or (verbose) status shows
// the Secret's value, or a sandbox carries more than 64 KiB. The env the
// agent passes holds the Secret, as kubelet's does: a runtime that echoes
// it in a verbose ContainerStatus (containerd: the OCI spec) is asked for
// the plain status.
func checkCRIKeepsSecret(t *testing.T, n *node, secret string) {
	t.Helper()
	ctx := context.Background()
	sandboxes, err := n.rt.cri().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	containers, err := n.rt.cri().ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]proto.Message{"ListPodSandbox": sandboxes, "ListContainers": containers}
	for _, sb := range sandboxes.GetItems() {
		if size := proto.Size(sb); size > 64<<10 {
			t.Errorf("sandbox %s: %d bytes in ListPodSandbox", sb.GetId(), size)
		}
		st, err := n.rt.cri().PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.GetId(), Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		answers["PodSandboxStatus "+sb.GetId()] = st
	}
	for _, c := range containers.GetContainers() {
		st, err := n.rt.cri().ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId(), Verbose: !n.rt.echoesEnv()})
		if err != nil {
			t.Fatal(err)
		}
		answers["ContainerStatus "+c.GetId()] = st
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(secret))
	for name, answer := range answers {
		text := prototext.Format(answer)
		if strings.Contains(text, secret) || strings.Contains(text, encoded) {
			t.Errorf("%s shows the Secret's value", name)
		}
	}
}
