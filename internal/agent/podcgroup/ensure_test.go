package podcgroup

import (
	"os"
	"path/filepath"
	"testing"
)

// A v2 controller is enabled in the subtree_control of every ancestor of
// the cgroup, from the root down, and not in the cgroup itself.
func TestEnableControllerDownToTheCgroup(t *testing.T) {
	root := t.TempDir()
	old := cgroupRoot
	cgroupRoot = root
	t.Cleanup(func() { cgroupRoot = old })
	dir := "berth.slice/berth-kubepods.slice/berth-kubepods-pod1.slice"
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := enableController("/"+dir, "hugetlb"); err != nil {
		t.Fatal(err)
	}
	for _, ancestor := range []string{"", "berth.slice", "berth.slice/berth-kubepods.slice"} {
		got, err := os.ReadFile(filepath.Join(root, ancestor, "cgroup.subtree_control"))
		if err != nil || string(got) != "+hugetlb" {
			t.Errorf("%q: subtree_control %q, %v; want +hugetlb", ancestor, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, dir, "cgroup.subtree_control")); err == nil {
		t.Errorf("the pod's own cgroup got a subtree_control write")
	}
}
