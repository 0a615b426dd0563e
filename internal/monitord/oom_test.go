package monitord

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
		if c.file != filepath.Join(dir, tc.file) || c.baseline != 2 || killedOnly(c, false) {
			t.Errorf("%s: counter %+v, killed %v; want %s at 2, not killed", tc.name, c, killedOnly(c, false), filepath.Join(dir, tc.file))
			continue
		}
		writeFile(t, filepath.Join(dir, tc.file), "oom_kill 3\n")
		if !killedOnly(c, false) {
			t.Errorf("%s: a higher oom_kill is not seen", tc.name)
		}
	}
	if c := newOOMCounter("bad/x.slice:berth:c1"); c.file != "" {
		t.Errorf("invalid systemd path: counter %+v, want none", c)
	}
}

// TestOOMCounterKeepsAKillSeenBeforeTheCgroupWent: on v2 a kill announced
// in memory.events while the cgroup exists is reported even when the file
// is gone at exit, as it is once systemd has removed a container's scope.
func TestOOMCounterKeepsAKillSeenBeforeTheCgroupWent(t *testing.T) {
	saved := cgroupRoot
	t.Cleanup(func() { cgroupRoot = saved })
	cgroupRoot = t.TempDir()
	dir := filepath.Join(cgroupRoot, "kubepods.slice", "berth-c1.scope")
	mustMkdir(t, dir)
	file := filepath.Join(dir, "memory.events")
	writeFile(t, file, "oom 0\noom_kill 0\n")
	c := newOOMCounter("kubepods.slice:berth:c1")
	defer c.stop()
	if c.watch == nil {
		t.Fatal("no inotify watch on memory.events")
	}
	writeFile(t, file, "oom 1\noom_kill 1\n")
	deadline := time.Now().Add(10 * time.Second)
	for !c.sawKill() {
		if time.Now().After(deadline) {
			t.Fatal("the watch did not see oom_kill 1 within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if !killedOnly(c, false) {
		t.Error("a kill seen before the cgroup was removed is not reported")
	}
	if other := newOOMCounter("kubepods.slice:berth:c2"); killedOnly(other, true) {
		t.Error("a counter whose cgroup never existed reports a kill")
	}
}

// TestOOMCounterFallsBackToTheParent: when the container's memory.events
// is gone at exit before any watch saw the kill (systemd removed the scope
// first), a kill counted in the parent since create is the container's if
// its init died of SIGKILL; not otherwise, and not without a new kill.
func TestOOMCounterFallsBackToTheParent(t *testing.T) {
	saved := cgroupRoot
	t.Cleanup(func() { cgroupRoot = saved })
	for _, tc := range []struct {
		name          string
		parentKills   string
		sigkill, want bool
	}{
		{"parent counted a kill, SIGKILL", "oom_kill 3\n", true, true},
		{"parent counted a kill, exit code", "oom_kill 3\n", false, false},
		{"parent counted none, SIGKILL", "oom_kill 2\n", true, false},
	} {
		cgroupRoot = t.TempDir()
		pod := filepath.Join(cgroupRoot, "kubepods.slice", "kubepods-pod1.slice")
		scope := filepath.Join(pod, "berth-c1.scope")
		mustMkdir(t, scope)
		writeFile(t, filepath.Join(pod, "memory.events"), "oom_kill 2\n")
		writeFile(t, filepath.Join(scope, "memory.events"), "oom_kill 0\n")
		c := newOOMCounter("kubepods-pod1.slice:berth:c1")
		c.stop() // no watch: the kill reaches neither it nor the file
		if err := os.RemoveAll(scope); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(pod, "memory.events"), tc.parentKills)
		if got := killedOnly(c, tc.sigkill); got != tc.want {
			t.Errorf("%s: killed %v, want %v", tc.name, got, tc.want)
		}
	}
	// The container's own file, when it is there, decides alone.
	cgroupRoot = t.TempDir()
	pod := filepath.Join(cgroupRoot, "kubepods.slice", "kubepods-pod1.slice")
	mustMkdir(t, filepath.Join(pod, "berth-c1.scope"))
	writeFile(t, filepath.Join(pod, "memory.events"), "oom_kill 0\n")
	writeFile(t, filepath.Join(pod, "berth-c1.scope", "memory.events"), "oom_kill 0\n")
	c := newOOMCounter("kubepods-pod1.slice:berth:c1")
	defer c.stop()
	writeFile(t, filepath.Join(pod, "memory.events"), "oom_kill 1\n")
	if killedOnly(c, true) {
		t.Error("a sibling's kill counted in the parent is taken while the container's own file says none")
	}
}

func killedOnly(c *oomCounter, sigkill bool) bool {
	killed, _ := c.killed(sigkill)
	return killed
}

// sawKill reads what the watch has seen, without reading the file.
func (c *oomCounter) sawKill() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen > c.baseline
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
