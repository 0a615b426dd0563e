package pod

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// TestRunSandboxRefusesAParentOfTheOtherDriver: under the systemd driver a
// cgroupfs path is refused, under cgroupfs a slice, before anything is made.
func TestRunSandboxRefusesAParentOfTheOtherDriver(t *testing.T) {
	for _, tc := range []struct {
		systemd bool
		parent  string
	}{
		{true, "/kubepods/besteffort/pod1"},
		{true, "kubepods--besteffort.slice"},
		{false, "kubepods-besteffort-pod1.slice"},
	} {
		s, err := New(Config{RootDir: t.TempDir(), StateDir: t.TempDir(), Images: noImages{}, Network: noNetwork{},
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), SystemdCgroup: tc.systemd})
		if err != nil {
			t.Fatal(err)
		}
		cfg := goodSandboxConfig()
		cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{CgroupParent: tc.parent}
		_, err = s.RunSandbox(context.Background(), cfg, "")
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "config.linux: cgroup_parent") {
			t.Errorf("systemd %v, parent %q: err = %v, want InvalidArgument naming config.linux: cgroup_parent", tc.systemd, tc.parent, err)
		}
		if entries, _ := os.ReadDir(s.sandboxesDir()); len(entries) != 0 {
			t.Errorf("systemd %v, parent %q: %d sandbox records left", tc.systemd, tc.parent, len(entries))
		}
	}
}
