package monitord

import (
	"bytes"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
		c := newOOMCounter(tc.path, testWatcher())
		defer c.stop()
		if c.file != filepath.Join(dir, tc.file) || c.baseline != 2 || c.killed() {
			t.Errorf("%s: counter %+v, killed %v; want %s at 2, not killed", tc.name, c, c.killed(), filepath.Join(dir, tc.file))
			continue
		}
		writeFile(t, filepath.Join(dir, tc.file), "oom_kill 3\n")
		if !c.killed() {
			t.Errorf("%s: a higher oom_kill is not seen", tc.name)
		}
	}
	if c := newOOMCounter("bad/x.slice:berth:c1", testWatcher()); c.file != "" {
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
	c := newOOMCounter("kubepods.slice:berth:c1", testWatcher())
	defer c.stop()
	if c.watcher == nil {
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
	if !c.killed() {
		t.Error("a kill seen before the cgroup was removed is not reported")
	}
	if other := newOOMCounter("kubepods.slice:berth:c2", testWatcher()); other.killed() {
		t.Error("a counter whose cgroup never existed reports a kill")
	}
}

// TestOOMCounterWithoutInotify: when no inotify instance can be made (the
// uid's fs.inotify.max_user_instances is used up), the counter goes on
// without a watch and still counts a kill read at exit; the failure is
// logged once, and a later counter tries again.
func TestOOMCounterWithoutInotify(t *testing.T) {
	saved, savedInit := cgroupRoot, inotifyInit
	t.Cleanup(func() { cgroupRoot, inotifyInit = saved, savedInit })
	cgroupRoot = t.TempDir()
	inotifyInit = func(int) (int, error) { return -1, unix.EMFILE }
	var logs bytes.Buffer
	w := newOOMWatcher(log.New(&logs, "", 0), "p1")
	for _, id := range []string{"c1", "c2"} {
		dir := filepath.Join(cgroupRoot, "kubepods.slice", "berth-"+id+".scope")
		mustMkdir(t, dir)
		writeFile(t, filepath.Join(dir, "memory.events"), "oom_kill 0\n")
		c := newOOMCounter("kubepods.slice:berth:"+id, w)
		if c.watcher != nil {
			t.Fatalf("%s: a watch without an inotify instance", id)
		}
		writeFile(t, filepath.Join(dir, "memory.events"), "oom_kill 1\n")
		if !c.killed() {
			t.Errorf("%s: a kill read at exit is not counted without a watch", id)
		}
		c.stop()
	}
	if n := strings.Count(logs.String(), "inotify instance"); n != 1 {
		t.Errorf("the failure is logged %d times, want once: %q", n, logs.String())
	}
	inotifyInit = savedInit
	dir := filepath.Join(cgroupRoot, "kubepods.slice", "berth-c3.scope")
	mustMkdir(t, dir)
	writeFile(t, filepath.Join(dir, "memory.events"), "oom_kill 0\n")
	c := newOOMCounter("kubepods.slice:berth:c3", w)
	defer c.stop()
	if c.watcher == nil {
		t.Error("no watch once inotify is available again")
	}
}

// TestOOMCountersShareOneInotifyInstance: the counters of a monitor's
// containers use one inotify instance (instances are a scarce per-uid
// resource), and each still sees its own container's kill.
func TestOOMCountersShareOneInotifyInstance(t *testing.T) {
	saved := cgroupRoot
	t.Cleanup(func() { cgroupRoot = saved })
	cgroupRoot = t.TempDir()
	before := inotifyFDs(t)
	w := newOOMWatcher(log.New(io.Discard, "", 0), "p1")
	var counters []*oomCounter
	for _, id := range []string{"c1", "c2", "c3"} {
		dir := filepath.Join(cgroupRoot, "kubepods.slice", "berth-"+id+".scope")
		mustMkdir(t, dir)
		writeFile(t, filepath.Join(dir, "memory.events"), "oom_kill 0\n")
		c := newOOMCounter("kubepods.slice:berth:"+id, w)
		defer c.stop()
		if c.watcher == nil {
			t.Fatalf("%s: no watch", id)
		}
		counters = append(counters, c)
	}
	if got := inotifyFDs(t); got != before+1 {
		t.Errorf("%d inotify descriptors for 3 containers, want 1", got-before)
	}
	writeFile(t, counters[1].file, "oom_kill 1\n")
	deadline := time.Now().Add(10 * time.Second)
	for !counters[1].sawKill() {
		if time.Now().After(deadline) {
			t.Fatal("the shared watch did not see c2's oom_kill 1 within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if counters[0].sawKill() || counters[2].sawKill() {
		t.Error("c2's kill is counted for another container")
	}
}

// inotifyFDs counts the process's open inotify instances.
func inotifyFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// sawKill reads what the watch has seen, without reading the file.
func (c *oomCounter) sawKill() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen > c.baseline
}

func testWatcher() *oomWatcher { return newOOMWatcher(log.New(io.Discard, "", 0), "p1") }

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
