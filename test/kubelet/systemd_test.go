package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/kube"
)

// driverLine is what kubelet 1.34+ logs when it takes its cgroup driver
// from the runtime's RuntimeConfig.
const driverLine = "Using cgroup driver setting received from the CRI runtime"

// TestStandaloneKubeletSystemd runs kubelet with cgroupDriver: systemd
// and berth serve with cgroup_driver = "systemd", both inside a systemd of
// the test's own (harness.PrivateSystemd; skipped where it cannot run):
// kubelet reaches that systemd on its private socket and makes the
// kubepods slices, berth's containers are scopes in the pod slices, a
// restarted kubelet adopts them, and removed pods leave no pod slice.
func TestStandaloneKubeletSystemd(t *testing.T) {
	sd := harness.StartPrivateSystemd(t)
	k := kube.NewKubelet(t, kube.KubeletOptions{Bin: os.Getenv("BERTH_KUBELET"), CgroupDriver: "systemd", Wrap: sd.Enter})
	o := daemonOptions()
	sd.Serve(t, &o)
	d := harness.Start(t, o)
	k.Start(d.Socket)
	c := cri{k: k, d: d}
	lines := k.LogLines(driverLine)
	if len(lines) == 0 || !strings.Contains(lines[0], `cgroupDriver="systemd"`) {
		t.Fatalf("kubelet log: %q lines %q; want one saying systemd", driverLine, lines)
	}
	t.Logf("kubelet: %s", lines[0])

	web, crash := c.runStaticPods()
	c.checkScopes(sd, web, "a", "b")
	c.checkScopes(sd, crash)
	c.restartKubelet(web, crash)
	c.checkScopes(sd, web, "a", "b")
	uids := c.podUIDs()
	c.removeStaticPods(func() []string { return podSlices(sd, uids) })
	checkKubepodsSlices(t, sd)
	t.Logf("kubelet removed both pods and their slices")
}

// podSlice is the slice unit kubelet's systemd driver makes for a
// BestEffort pod: "-" in the uid is escaped as "_" (a "-" in a slice name
// means nesting).
func podSlice(uid string) string {
	return "kubepods-besteffort-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
}

// checkScopes checks that the pod named pod has its slice, active in
// systemd, and that its running containers named in ctrs are the scopes
// berth-<id>.scope of that slice, nested as systemd nests slices, with
// their processes in the memory and systemd hierarchies, and active.
// berth-pause has no scope here: kubelet's pods keep the default
// CONTAINER PID namespace, for which it runs no process.
func (c cri) checkScopes(sd *harness.PrivateSystemd, pod string, ctrs ...string) {
	t := c.k.T
	t.Helper()
	sbs := c.readySandboxes(pod)
	if len(sbs) != 1 {
		t.Fatalf("pod %s: %d ready sandboxes, want 1", pod, len(sbs))
	}
	slice := podSlice(sbs[0].GetMetadata().GetUid())
	if out, err := sd.Systemctl("is-active", slice); out != "active" {
		t.Errorf("pod %s: systemctl is-active %s = %q, %v", pod, slice, out, err)
	}
	for _, name := range ctrs {
		id := c.runningID(pod, name)
		if id == "" {
			t.Fatalf("pod %s: container %s does not run", pod, name)
		}
		unit := "berth-" + id + ".scope"
		for _, h := range []string{"memory", "systemd"} {
			dir := filepath.Join(sd.Roots[h], "kubepods.slice", "kubepods-besteffort.slice", slice, unit)
			procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil || strings.TrimSpace(string(procs)) == "" {
				t.Errorf("pod %s, container %s: %s: processes %q, %v; want its processes there", pod, name, dir, procs, err)
			}
		}
		if out, err := sd.Systemctl("is-active", unit); out != "active" {
			t.Errorf("pod %s, container %s: systemctl is-active %s = %q, %v", pod, name, unit, out, err)
		}
	}
	t.Logf("pod %s: slice %s active, %d container scopes in it", pod, slice, len(ctrs))
}

// podSlices lists the slice directories of the pods with these uids in
// any of systemd's hierarchies, at any QoS level.
func podSlices(sd *harness.PrivateSystemd, uids []string) []string {
	var out []string
	for _, root := range sd.Roots {
		for _, uid := range uids {
			name := "pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
			for _, pattern := range []string{"kubepods.slice/kubepods-" + name, "kubepods.slice/*/kubepods-*-" + name} {
				found, _ := filepath.Glob(filepath.Join(root, pattern))
				out = append(out, found...)
			}
		}
	}
	return out
}

// checkKubepodsSlices checks what kubelet leaves once its pods are gone:
// kubepods.slice with its QoS slices, active and without a pod slice or a
// process (the test's cleanup then removes them with systemd).
func checkKubepodsSlices(t *testing.T, sd *harness.PrivateSystemd) {
	t.Helper()
	units := []string{"kubepods.slice", "kubepods-besteffort.slice", "kubepods-burstable.slice"}
	if out, err := sd.Systemctl(append([]string{"is-active"}, units...)...); out != "active\nactive\nactive" {
		t.Errorf("systemctl is-active %v = %q, %v; want all active", units, out, err)
	}
	// active, with a job, or failed: a stopped transient slice is gone
	if out, err := sd.Systemctl("list-units", "--no-legend", "--plain", "kubepods-*pod*"); out != "" || err != nil {
		t.Errorf("pod slices in systemd after the pods were removed: %q, %v", out, err)
	}
	var left []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		left = nil
		for _, h := range []string{"memory", "systemd"} {
			left = append(left, kubepodsDirs(filepath.Join(sd.Roots[h], "kubepods.slice"))...)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("under kubepods.slice after the pods were removed: %v; want only the QoS slices, empty", left)
	}
}

// kubepodsDirs lists the cgroups under top other than kubelet's QoS slices,
// and the QoS slices that hold processes.
func kubepodsDirs(top string) []string {
	var left []string
	_ = filepath.WalkDir(top, func(p string, e os.DirEntry, err error) error { // best effort
		if err != nil || !e.IsDir() {
			return nil
		}
		if name := e.Name(); p != top && name != "kubepods-besteffort.slice" && name != "kubepods-burstable.slice" {
			left = append(left, p)
		} else if procs, _ := os.ReadFile(filepath.Join(p, "cgroup.procs")); len(procs) > 0 {
			left = append(left, p+" (processes)")
		}
		return nil
	})
	return left
}
