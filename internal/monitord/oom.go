package monitord

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/berth-dev/berth/internal/cgrouppath"
)

// cgroupRoot is where cgroup hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// oomCounter reads the kernel's OOM kill count of one container cgroup.
//
// On cgroup v2 the systemd driver's scope, and its memory.events with it,
// is removed by systemd as soon as its last process is gone — often
// before the monitor has reaped the init. So on v2 the counter also
// watches memory.events (as containerd's shim does), through the monitor's
// shared inotify instance, and keeps the highest count it saw.
type oomCounter struct {
	file     string // memory.oom_control (v1) or memory.events (v2); "" = unknown
	baseline uint64

	watcher *oomWatcher // nil without a watch
	wd      int32       // the watch in watcher's instance

	mu   sync.Mutex
	seen uint64 // highest count read since create
}

// newOOMCounter locates the counter of cgroupPath (an OCI cgroupsPath in
// either driver's form), records its current value and, on v2, watches it
// with w.
func newOOMCounter(cgroupPath string, w *oomWatcher) *oomCounter {
	rel, err := cgrouppath.Dir(cgroupPath)
	if err != nil { // none, or not one berth builds: OOM kills go unnoticed
		return &oomCounter{}
	}
	c := &oomCounter{}
	st, err := os.Stat(filepath.Join(cgroupRoot, "memory"))
	v1 := err == nil && st.IsDir()
	if v1 {
		c.file = filepath.Join(cgroupRoot, "memory", rel, "memory.oom_control")
	} else {
		c.file = filepath.Join(cgroupRoot, rel, "memory.events")
	}
	c.baseline, _ = readOOMKills(c.file) // a missing file counts as 0
	c.seen = c.baseline
	if !v1 && w.add(c) { // after the baseline: the watch updates seen
		c.watcher = w
	}
	return c
}

// update reads the file and keeps the highest count.
func (c *oomCounter) update() {
	if c.file == "" {
		return
	}
	count, err := readOOMKills(c.file)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.seen = max(c.seen, count)
	c.mu.Unlock()
}

// killed reports whether the kernel OOM-killed a process in the cgroup
// since the counter was made: the highest count seen (the file read once
// more) against the baseline.
func (c *oomCounter) killed() bool {
	c.update()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen > c.baseline
}

// stop ends the watch; killed still answers from what was seen.
func (c *oomCounter) stop() {
	if c.watcher != nil {
		c.watcher.remove(c)
	}
}

// readOOMKills returns the "oom_kill" value of a cgroup memory file.
func readOOMKills(file string) (uint64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), " ")
		if ok && key == "oom_kill" {
			return strconv.ParseUint(strings.TrimSpace(value), 10, 64)
		}
	}
	return 0, nil
}
