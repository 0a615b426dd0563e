package monitord

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOOMCounterFindsEitherForm: the counter of a container's cgroup is
// found from a cgroupfs path and from a systemd slice:prefix:name path,
// under v1 (memory hierarchy) and v2.
func TestOOMCounterFindsEitherForm(t *testing.T) {
	saved := cgroupRoot
	t.Cleanup(func() { cgroupRoot = saved })
	for _, tc := range []struct {
		name, path, dir, file string
		v1                    bool
	}{
		{"v1 cgroupfs", "/berth/pod1/c1", "memory/berth/pod1/c1", "memory.oom_control", true},
		{"v1 systemd", "kubepods-besteffort-pod1.slice:berth:c1",
			"memory/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/berth-c1.scope", "memory.oom_control", true},
		{"v2 systemd", "berth.slice:berth:c1", "berth.slice/berth-c1.scope", "memory.events", false},
	} {
		cgroupRoot = t.TempDir()
		if tc.v1 {
			mustMkdir(t, filepath.Join(cgroupRoot, "memory"))
		}
		dir := filepath.Join(cgroupRoot, tc.dir)
		mustMkdir(t, dir)
		writeFile(t, filepath.Join(dir, tc.file), "oom_kill_disable 0\noom_kill 2\n")
		c := newOOMCounter(tc.path)
		if c.file != filepath.Join(dir, tc.file) || c.baseline != 2 || c.killed() {
			t.Errorf("%s: counter %+v, killed %v; want %s at 2, not killed", tc.name, c, c.killed(), filepath.Join(dir, tc.file))
			continue
		}
		writeFile(t, filepath.Join(dir, tc.file), "oom_kill 3\n")
		if !c.killed() {
			t.Errorf("%s: a higher oom_kill is not seen", tc.name)
		}
	}
	if c := newOOMCounter("bad/x.slice:berth:c1"); c.file != "" {
		t.Errorf("invalid systemd path: counter %+v, want none", c)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
