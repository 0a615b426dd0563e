package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// TestNotFoundAndInvalidArgument checks idempotent stops and removals and
// the error codes of requests naming unknown objects or carrying bad fields.
func TestNotFoundAndInvalidArgument(t *testing.T) {
	d := startDaemon(t)
	unknown := harness.RandomHex(64)
	ctx := d.ctx()

	// api.proto StopPodSandbox: "This call is idempotent, and must not return an
	// error if all relevant resources have already been reclaimed."
	if _, err := d.RT.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: unknown}); err != nil {
		t.Errorf("StopPodSandbox(unknown): %v, want success", err)
	}
	// api.proto RemovePodSandbox: "must not return an error if the sandbox has already been removed."
	if _, err := d.RT.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: unknown}); err != nil {
		t.Errorf("RemovePodSandbox(unknown): %v, want success", err)
	}
	// api.proto StopContainer: "must not return an error if the container has already been stopped."
	if _, err := d.RT.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: unknown, Timeout: 1}); err != nil {
		t.Errorf("StopContainer(unknown): %v, want success", err)
	}
	// api.proto RemoveContainer: "must not return an error if the container has already been removed."
	if _, err := d.RT.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: unknown}); err != nil {
		t.Errorf("RemoveContainer(unknown): %v, want success", err)
	}

	// api.proto: "If the PodSandbox is not present, returns an error."
	_, err := d.RT.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: unknown})
	wantCode(t, "PodSandboxStatus(unknown)", err, codes.NotFound)
	// api.proto: "If the container is not present, returns an error."
	_, err = d.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: unknown})
	wantCode(t, "ContainerStatus(unknown)", err, codes.NotFound)
	_, err = d.RT.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: unknown})
	wantCode(t, "StartContainer(unknown)", err, codes.NotFound)

	_, err = d.RT.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{})
	wantCode(t, "PodSandboxStatus(\"\")", err, codes.InvalidArgument)
	_, err = d.RT.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{})
	wantCode(t, "ContainerStatus(\"\")", err, codes.InvalidArgument)
	_, err = d.RT.StartContainer(ctx, &runtimeapi.StartContainerRequest{})
	wantCode(t, "StartContainer(\"\")", err, codes.InvalidArgument)
	_, err = d.RT.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{})
	wantCode(t, "StopPodSandbox(\"\")", err, codes.InvalidArgument)
	_, err = d.RT.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{})
	wantCode(t, "RemoveContainer(\"\")", err, codes.InvalidArgument)

	podCfg := podConfig(t, "errors")
	_, err = d.RT.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: unknown, Config: shell("c", "true"), SandboxConfig: podCfg,
	})
	wantCode(t, "CreateContainer in an unknown sandbox", err, codes.NotFound)

	podID := d.runPod(podCfg)
	noImage := shell("c", "true")
	noImage.Image.Image = "berth.test/no-such-image:v1"
	_, err = d.RT.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: noImage, SandboxConfig: podCfg})
	if msg := wantCode(t, "CreateContainer with an unknown image", err, codes.NotFound); !strings.Contains(msg, "no-such-image") {
		t.Errorf("CreateContainer with an unknown image: message %q does not name the image", msg)
	}
	checkInvalidFields(t, d, podID, podCfg)
}

// checkInvalidFields sends configs with one bad field each.
func checkInvalidFields(t *testing.T, d *daemon, podID string, podCfg *runtimeapi.PodSandboxConfig) {
	ctx := d.ctx()
	noMetadata := podConfig(t, "x")
	noMetadata.Metadata = nil
	relativeLogDir := podConfig(t, "x")
	relativeLogDir.LogDirectory = "relative/logs"
	badPort := podConfig(t, "x")
	badPort.PortMappings = []*runtimeapi.PortMapping{{ContainerPort: 70000, HostPort: 8080}}
	for _, tc := range []struct {
		name  string
		cfg   *runtimeapi.PodSandboxConfig
		field string
	}{
		{"no metadata", noMetadata, "metadata"},
		{"relative log_directory", relativeLogDir, "log_directory"},
		{"container_port 70000", badPort, "container_port"},
	} {
		_, err := d.RT.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: tc.cfg})
		if msg := wantCode(t, "RunPodSandbox with "+tc.name, err, codes.InvalidArgument); err != nil && !strings.Contains(msg, tc.field) {
			t.Errorf("RunPodSandbox with %s: message %q does not name %s", tc.name, msg, tc.field)
		}
	}

	absLog := shell("abslog", "true")
	absLog.LogPath = "/tmp/escape.log"
	escLog := shell("esclog", "true")
	escLog.LogPath = "../escape.log"
	noName := shell("", "true")
	for _, tc := range []struct {
		name  string
		cfg   *runtimeapi.ContainerConfig
		field string
	}{
		{"absolute log_path", absLog, "log_path"},
		{"log_path escaping the log directory", escLog, "log_path"},
		{"empty metadata name", noName, "metadata"},
	} {
		_, err := d.RT.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: tc.cfg, SandboxConfig: podCfg})
		if msg := wantCode(t, "CreateContainer with "+tc.name, err, codes.InvalidArgument); err != nil && !strings.Contains(msg, tc.field) {
			t.Errorf("CreateContainer with %s: message %q does not name %s", tc.name, msg, tc.field)
		}
	}
	list, err := d.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.GetItems()) != 1 {
		t.Errorf("ListPodSandbox after rejected requests: %d items (%v), want only the valid pod", len(list.GetItems()), err)
	}
}

// TestStartContainerFailure makes runc fail to run a container (its
// command does not exist): StartContainer fails naming it, the container
// is exited with StartError and 128 as containerd reports it, its removal
// leaves nothing behind, and the pod still works.
func TestStartContainerFailure(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "rollback")
	podID := d.runPod(podCfg)
	bundlesBefore := dirNames(filepath.Join(d.State, "bundles"))
	mountsBefore := len(d.MountsLeft())

	bad := containerConfig("app", "/no/such/bin")
	created, err := d.RT.CreateContainer(d.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: bad, SandboxConfig: podCfg})
	if err != nil {
		t.Fatalf("CreateContainer: %v (runc runs at the start)", err)
	}
	id := created.GetContainerId()
	_, err = d.RT.StartContainer(d.ctx(), &runtimeapi.StartContainerRequest{ContainerId: id})
	if err == nil {
		t.Fatalf("StartContainer with command /no/such/bin succeeded, want an error from runc run")
	}
	t.Logf("StartContainer /no/such/bin: %v", err)
	if !strings.Contains(err.Error(), "/no/such/bin") || !strings.Contains(err.Error(), id) {
		t.Errorf("error %q does not name the container and the missing command", err)
	}
	st, err := d.RT.ContainerStatus(d.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if s := st.GetStatus(); err != nil || s.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || s.GetExitCode() != 128 ||
		s.GetReason() != "StartError" || !strings.Contains(s.GetMessage(), "/no/such/bin") {
		t.Errorf("status after the failed start: %v %v; want exited 128, StartError, naming the command", s, err)
	}
	if ids := d.RuncContainers(); len(ids) != 1 || ids[0] != podID {
		t.Errorf("runc containers after the failed start: %v, want only the sandbox's berth-pause", ids)
	}
	if _, err := d.RT.RemoveContainer(d.ctx(), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(filepath.Join(d.State, "bundles")); len(got) != len(bundlesBefore) {
		t.Errorf("bundles after the removal: %v, want %v", got, bundlesBefore)
	}
	if got := d.MountsLeft(); len(got) != mountsBefore {
		t.Errorf("mounts after the removal: %v (had %d before)", got, mountsBefore)
	}
	if got := dirNames(filepath.Join(d.Root, "containers")); len(got) != 0 {
		t.Errorf("container records after the removal: %v", got)
	}

	// The pod still works, and the failed container's name was released.
	good := shell("app", "echo fine")
	id = d.run(podID, podCfg, good)
	if st := d.waitExited(id, 10*time.Second); st.GetExitCode() != 0 {
		t.Errorf("container after the failed start: exit code %d, want 0", st.GetExitCode())
	}
	if !hasLines(readLog(t, logPath(podCfg, good)), "stdout F fine") {
		t.Errorf("log of the container after the failed start: %+v", readLog(t, logPath(podCfg, good)))
	}
}

func dirNames(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
