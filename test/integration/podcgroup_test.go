package integration

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// guaranteedPod writes a Guaranteed pod (64Mi, 500m) to a manifest.
func guaranteedPod(t *testing.T, name string) string {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata: {name: `+name+`}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    imagePullPolicy: Never
    command: [sleep, "1000"]
    resources: {limits: {memory: 64Mi, cpu: 500m}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// checkPodCgroupLimits: the pod's own cgroup (v1 hierarchies memory and
// cpu) holds the Guaranteed pod's limits, as kubelet sizes it.
func checkPodCgroupLimits(t *testing.T, memoryDir, cpuDir string) bool {
	t.Helper()
	failed := t.Failed()
	if got := readCgroupInt(t, filepath.Join(memoryDir, "memory.limit_in_bytes")); got != 64<<20 {
		t.Errorf("pod cgroup %s: memory.limit_in_bytes %d, want %d", memoryDir, got, 64<<20)
	}
	if got := readCgroupInt(t, filepath.Join(cpuDir, "cpu.cfs_quota_us")); got != 50000 {
		t.Errorf("pod cgroup %s: cpu.cfs_quota_us %d, want 50000", cpuDir, got)
	}
	if got := readCgroupInt(t, filepath.Join(cpuDir, "cpu.shares")); got != 512 {
		t.Errorf("pod cgroup %s: cpu.shares %d, want 512", cpuDir, got)
	}
	return failed || !t.Failed()
}

// TestAgentSizesThePodCgroup: with the cgroupfs driver the agent makes
// <parent>/kubepods/pod<uid> with the pod's limits before the sandbox, the
// pod's containers run below it, and it goes with the pod. Three pods are
// applied at once, so that their cgroups may be made at the same time (a
// race-built daemon then reports unguarded shared state, as the e2e suite
// found in the cgroups library's first Set).
func TestAgentSizesThePodCgroup(t *testing.T) {
	d := startDaemon(t)
	var docs []string
	for _, name := range []string{"sized", "sized-b", "sized-c"} {
		b, err := os.ReadFile(guaranteedPod(t, name))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	manifest := filepath.Join(t.TempDir(), "pods.yaml")
	if err := os.WriteFile(manifest, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	d.MustBerth("apply", "-f", manifest)
	var pod struct {
		Metadata struct{ UID string } `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(d.MustBerth("get", "pod", "sized", "-o", "json")), &pod); err != nil || pod.Metadata.UID == "" {
		t.Fatalf("pod uid: %v", err)
	}
	rel := filepath.Join("berth", "kubepods", "pod"+pod.Metadata.UID)
	memoryDir, cpuDir := filepath.Join("/sys/fs/cgroup/memory", rel), filepath.Join("/sys/fs/cgroup/cpu", rel)
	var children []string
	if !eventually(60*time.Second, func() bool {
		children, _ = filepath.Glob(filepath.Join(memoryDir, "*", "cgroup.procs"))
		return len(children) >= 1
	}) {
		t.Fatalf("no container cgroup below %s after 60s\n%s", memoryDir, d.LogTail(40))
	}
	checkPodCgroupLimits(t, memoryDir, cpuDir)
	d.MustBerth("delete", "pod", "sized", "sized-b", "sized-c", "--grace-period=1")
	for _, dir := range []string{memoryDir, cpuDir} {
		if !eventually(30*time.Second, func() bool { _, err := os.Stat(dir); return errors.Is(err, fs.ErrNotExist) }) {
			t.Errorf("pod cgroup %s is left after delete", dir)
		}
	}
}
