package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// newManager gives a manager on a fresh root whose pods are torn down
// (mounts included) before the root is removed.
func newManager(t *testing.T) *Manager {
	t.Helper()
	m := &Manager{Root: t.TempDir()}
	t.Cleanup(func() {
		if err := m.TeardownOrphans(nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		assertNoMountsUnder(t, m.Root)
	})
	return m
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount tmpfs")
	}
}

func podWith(uid string, volumes ...v1.Volume) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: types.UID(uid),
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"owner": "team \"a\""},
		},
		Spec: v1.PodSpec{
			Volumes: volumes,
			Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
				Limits: v1.ResourceList{v1.ResourceMemory: mustQuantity("64Mi")},
			}}},
		},
	}
}

func setup(t *testing.T, m *Manager, pod *v1.Pod, sources podspec.Sources) podspec.VolumePaths {
	t.Helper()
	paths, err := m.Setup(context.Background(), pod, sources, podspec.Downward{})
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return paths
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(data)
}

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode() & (os.ModePerm | os.ModeSetgid)
}

func isTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Type == unix.TMPFS_MAGIC
}

func assertNoMountsUnder(t *testing.T, dir string) {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(unescapeMountPath(fields[4]), real+"/") {
			t.Errorf("mount left behind: %s", fields[4])
		}
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
