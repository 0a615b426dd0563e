package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
	"github.com/berth-dev/berth/internal/agent/logrotate"
)

// The agent rotates the logs of its pods' running containers only (not
// an exited init container's, nor those of sandboxes it did not make),
// through CRI ReopenContainerLog.
func TestAgentRotatesItsRunningContainersLogs(t *testing.T) {
	rt := criclienttest.New()
	dir := t.TempDir()
	a := startTestAgentIn(t, rt, dir)
	a.apply(t, initPod)
	waitFor(t, "web is running", func() bool { return ctrStatus(a.pod(t, "web"), "app").State.Running != nil })
	foreign, err := rt.RunPodSandbox(context.Background(), &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "other", Namespace: "default", Uid: "u2"}, LogDirectory: dir + "/logs/other",
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(context.Background(), foreign, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "x"}, LogPath: "x/0.log",
	}, nil)
	if err != nil || rt.StartContainer(context.Background(), id) != nil {
		t.Fatal(err)
	}

	logs, err := runningLogs(context.Background(), a.cfg)
	if err != nil {
		t.Fatal(err)
	}
	uid := string(a.pod(t, "web").UID)
	want := filepath.Join(dir, "logs", "default_web_"+uid, "app", "0.log")
	if len(logs) != 1 || logs[0].LogPath != want {
		t.Fatalf("running logs %+v; want app's alone, at %s", logs, want)
	}
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, make([]byte, logrotate.DefaultMaxSize), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := a.logs.RotateAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rt.Calls(), "reopen-log app") {
		t.Errorf("calls %v; want app's log reopened", rt.Calls())
	}
	rotated, err := logrotate.RotatedFiles(want)
	if err != nil || len(rotated) != 1 || !strings.HasPrefix(rotated[0], want+".") {
		t.Errorf("rotated files %v, %v; want one", rotated, err)
	}
}

// The pod log directory must be absolute, as the kubelet's podLogsDir:
// the runtime writes there from its own working directory, and log
// rotation and removal work only beneath an absolute root.
func TestNewRefusesARelativePodLogDir(t *testing.T) {
	rt := criclienttest.New()
	_, err := New(Config{Runtime: rt, Images: rt, RootDir: t.TempDir(), PodLogDir: "logs", Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), `pod log directory "logs"`) {
		t.Errorf("New with PodLogDir logs: %v; want the relative directory refused", err)
	}
}
