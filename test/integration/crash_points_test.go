package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// TestRecoveryOfStartNotRecorded stands in for a daemon killed between
// `runc run` and recording the start: the container is created (prepared)
// through CRI, the daemon is killed, the container is run behind its back,
// and the restarted daemon must report it RUNNING with its pid — a record
// left at CREATED would make kubelet start a second copy of the workload.
func TestRecoveryOfStartNotRecorded(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "start-lost")
	podID := d.runPod(podCfg)
	ctrID := d.create(podID, podCfg, shell("sleeper", "sleep 1000"))
	d.Kill9()
	// No pipes: the container would hold them open, and the wait with it.
	if err := exec.Command(harness.Runc(), "--root", filepath.Join(d.State, "runc"), "run", "--detach",
		"--bundle", filepath.Join(d.State, "bundles", ctrID), ctrID).Run(); err != nil {
		t.Fatalf("runc run behind the daemon's back: %v", err)
	}
	d.Start()
	st := d.containerStatus(ctrID)
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || st.GetStartedAt() == 0 {
		t.Fatalf("after recovery: state %v startedAt %d, want RUNNING with a start time", st.GetState(), st.GetStartedAt())
	}
	d.containerPid(ctrID) // fails without one
}

// TestReopenContainerLog rotates a running container's log the way kubelet
// does (rename, then ReopenContainerLog): new lines go to a new file at the
// log path, none are lost.
func TestReopenContainerLog(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "rotate")
	podID := d.runPod(podCfg)
	cfg := shell("counter", counterScript)
	id := d.run(podID, podCfg, cfg)
	path := logPath(podCfg, cfg)
	if !eventually(5*time.Second, func() bool { return len(readLog(t, path)) >= 3 }) {
		t.Fatalf("no log lines in %s", path)
	}
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RT.ReopenContainerLog(d.ctx(), &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err != nil {
		t.Fatalf("ReopenContainerLog: %v", err)
	}
	if !eventually(5*time.Second, func() bool {
		_, err := os.Stat(path)
		return err == nil && len(readLog(t, path)) >= 3
	}) {
		t.Fatalf("no new log file with lines at %s after ReopenContainerLog", path)
	}
	var seq []string
	for _, r := range append(readLog(t, rotated), readLog(t, path)...) {
		seq = append(seq, r.Content)
	}
	for i := range seq {
		if seq[i] != strconv.Itoa(i) {
			t.Fatalf("counter lines across the rotation are not 0, 1, 2, …: %s", strings.Join(seq, ","))
		}
	}
	if _, err := d.RT.StopContainer(d.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	// api.proto lets the runtime refuse a container that is not running.
	if _, err := d.RT.ReopenContainerLog(d.ctx(), &runtimeapi.ReopenContainerLogRequest{ContainerId: id}); err == nil {
		t.Errorf("ReopenContainerLog of an exited container succeeded")
	}
}
