package integration

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRebootRecovery restarts the daemon on what a power-off reboot leaves:
// the root directory's records, host-local's leases, libcni's cache and the
// upper dirs, and no process, mount, namespace, link, iptables rule, cgroup
// or state directory. Every sandbox comes back not ready with its address
// released; a container that ran is exited, reason Unknown; one that had
// exited keeps its exit code (its record's update); one only created is
// exited too; and removing them all leaves nothing (the harness's leftover
// check). The records' flush policy (store.UpdateJSON, saveRecord) rests on
// this recovery.
func TestRebootRecovery(t *testing.T) {
	d := startDaemon(t)
	shared := podConfig(t, "reboot-shared")
	shared.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
	}
	private := podConfig(t, "reboot-private")
	sharedID, privateID := d.runPod(shared), d.runPod(private)
	running := []string{
		d.run(sharedID, shared, shell("runner", "exec sleep 3600")),
		d.run(privateID, private, shell("other", "exec sleep 3600")),
	}
	done := d.run(privateID, private, shell("done", "exit 3"))
	if st := d.waitExited(done, 10*time.Second); st.GetExitCode() != 3 {
		t.Fatalf("exit code %d, want 3", st.GetExitCode())
	}
	created := d.create(privateID, private, shell("created", "exec sleep 3600"))
	if n := len(d.Net.Allocations()); n != 2 {
		t.Fatalf("%d addresses allocated, want 2", n)
	}

	d.SimulateReboot()
	d.Start()

	for _, id := range []string{sharedID, privateID} {
		if st := d.sandboxStatus(id).GetState(); st != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			t.Errorf("sandbox %s after the reboot: %v, want not ready", id, st)
		}
	}
	for _, id := range append(running, created) {
		st := d.containerStatus(id)
		if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetReason() != "Unknown" || st.GetExitCode() != 255 {
			t.Errorf("container %s after the reboot: %v %q %d, want exited, Unknown, 255", id, st.GetState(), st.GetReason(), st.GetExitCode())
		}
	}
	if st := d.containerStatus(done); st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || st.GetExitCode() != 3 {
		t.Errorf("container that had exited: %v %d, want exited with its code 3", st.GetState(), st.GetExitCode())
	}
	if left := d.Net.Allocations(); len(left) != 0 {
		t.Errorf("addresses still allocated after the reboot's recovery: %v", left)
	}
	for _, id := range []string{sharedID, privateID} {
		if _, err := d.RT.StopPodSandbox(d.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Errorf("StopPodSandbox %s: %v", id, err)
		}
		if _, err := d.RT.RemovePodSandbox(d.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Errorf("RemovePodSandbox %s: %v", id, err)
		}
	}
}
