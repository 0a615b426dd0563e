package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

const secretValue = "s3cr3t-7f9d1c" //nolint:gosec // G101: a made-up value the test looks for in logs and events

// largeSourcesManifest is a pod using five ConfigMaps of 1 MB each and a
// Secret (as a volume and in env).
func largeSourcesManifest() string {
	var b strings.Builder
	big := strings.Repeat("x", 1_000_000)
	for i := range 5 {
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big-%d}\ndata: {blob: %s}\n---\n", i, big)
	}
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: %s}\n---\n", secretValue)
	b.WriteString(`apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  volumes:
  - {name: creds, secret: {secretName: creds}}
`)
	for i := range 5 {
		fmt.Fprintf(&b, "  - {name: big-%d, configMap: {name: big-%d}}\n", i, i)
	}
	b.WriteString(`  containers:
  - name: app
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "1000"]
    env: [{name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: password}}}]
    volumeMounts: [{name: creds, mountPath: /creds}, {name: big-0, mountPath: /big}]
`)
	return b.String()
}

// checkMetadataSmallWithoutSecrets fails when a sandbox or container
// carries more than 64 KiB of labels and annotations, or the Secret.
func checkMetadataSmallWithoutSecrets(t *testing.T, rt *criclienttest.Runtime) {
	t.Helper()
	encoded := base64.StdEncoding.EncodeToString([]byte(secretValue))
	for object, m := range rt.Metadata() {
		size := 0
		for k, v := range m {
			size += len(k) + len(v)
			if strings.Contains(v, secretValue) || strings.Contains(v, encoded) {
				t.Errorf("%s: %s holds the Secret's value", object, k)
			}
		}
		if size > 64<<10 {
			t.Errorf("%s: %d bytes of labels and annotations", object, size)
		}
	}
}

func TestLargeSourcesStayOutOfCRIMetadata(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	uid := first.apply(t, largeSourcesManifest()).Pods()[0].UID
	waitFor(t, "big runs", func() bool { return first.pod(t, "big").Status.Phase == v1.PodRunning })
	checkMetadataSmallWithoutSecrets(t, rt)
	record := filepath.Join(dir, "root", "sources", uid+".json")
	if info, err := os.Stat(record); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the store's record: %v %v; want mode 0600", info, err)
	}

	// A restarted agent finds the sources again in its store.
	first.stop()
	second := startTestAgentIn(t, rt, dir)
	waitFor(t, "the volumes set up again with every source", func() bool {
		s := second.volumes.setUpWith(uid)
		return len(s.ConfigMaps) == 5 && len(s.Secrets) == 1 && string(s.Secrets[0].Data["password"]) == secretValue
	})
	waitFor(t, "the new agent reports big running", func() bool { return ctrStatus(second.pod(t, "big"), "app").State.Running != nil })
	if st := ctrStatus(second.pod(t, "big"), "app"); st.RestartCount != 0 {
		t.Errorf("after the restart: %+v", st)
	}
	if sandboxes, _ := rt.Counts(); sandboxes != 1 {
		t.Errorf("%d sandboxes after the restart; want 1", sandboxes)
	}

	// Deleting the pod removes its record.
	if _, err := second.Delete(context.Background(), "default", "big", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "big gone", func() bool { return len(second.ListPods("").Items) == 0 })
	if _, err := os.Stat(record); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the record of a deleted pod: %v", err)
	}
}

// A pod whose sources the store lost keeps running as it is (reported,
// nothing removed) until its manifests are applied again; records of pods
// that are gone are removed.
func TestRecoveryWithoutTheStoredSourcesLeavesThePodAlone(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	first := startTestAgentIn(t, rt, dir)
	manifest := configMapReader
	uid := first.apply(t, manifest).Pods()[0].UID
	waitFor(t, "reader runs", func() bool { return first.pod(t, "reader").Status.Phase == v1.PodRunning })
	first.stop()
	store := filepath.Join(dir, "root", "sources")
	if err := os.Remove(filepath.Join(store, uid+".json")); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(store, "gone-pod.json")
	if err := os.WriteFile(stale, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}

	second := startTestAgentIn(t, rt, dir)
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the record of a pod that is gone: %v", err)
	}
	waitFor(t, "SourcesNotFound reported", func() bool {
		d, err := second.DescribePod("default", "reader")
		return err == nil && hasEvent(d.Events, "SourcesNotFound", "ConfigMap cfg")
	})
	waitFor(t, "the new agent reports reader running", func() bool { return ctrStatus(second.pod(t, "reader"), "app").State.Running != nil })
	if sandboxes, containers := rt.Counts(); sandboxes != 1 || containers != 1 {
		t.Errorf("runtime holds %d sandboxes, %d containers; want 1 and 1", sandboxes, containers)
	}
	if second.volumes.setUpWith(uid).ConfigMaps != nil {
		t.Error("the volumes were set up without the sources")
	}

	second.apply(t, manifest)
	waitFor(t, "the volumes set up once the manifests are applied again", func() bool {
		cms := second.volumes.setUpWith(uid).ConfigMaps
		return len(cms) == 1 && cms[0].Data["k"] == "one"
	})
	waitFor(t, "the record is back", func() bool {
		_, err := os.Stat(filepath.Join(store, uid+".json"))
		return err == nil
	})
}

func hasEvent(events []agentapi.Event, reason, text string) bool {
	for _, e := range events {
		if e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}
