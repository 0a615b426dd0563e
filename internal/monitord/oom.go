package monitord

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/cgrouppath"
)

// cgroupRoot is where cgroup hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// oomCounter reads the kernel's OOM kill count of one container cgroup.
//
// On cgroup v2 the systemd driver's scope, and its memory.events with it,
// is removed by systemd as soon as its last process is gone — often
// before the monitor has reaped the init, and before the kernel's
// (rate-limited) notice of the kill has reached an inotify watch. So on v2
// the counter also watches memory.events (as containerd's shim does) and
// keeps the highest count it saw, and it records the parent cgroup's
// memory.events, whose counts are hierarchical and outlive the scope: when
// the container's own file is gone at exit and its init died of SIGKILL, a
// kill counted in the parent since create is taken as this container's.
type oomCounter struct {
	file     string // memory.oom_control (v1) or memory.events (v2); "" = unknown
	baseline uint64
	// parent is the parent cgroup's memory.events on v2 ("" on v1, or
	// where the parent is the root, which has none).
	parent         string
	parentBaseline uint64

	mu    sync.Mutex
	seen  uint64   // highest count read since create
	watch *os.File // the inotify instance of a v2 file; nil without one
}

// newOOMCounter locates the counter of cgroupPath (an OCI cgroupsPath in
// either driver's form), records its current value and, on v2, starts
// watching it.
func newOOMCounter(cgroupPath string) *oomCounter {
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
		if dir := path.Dir(rel); dir != "/" {
			c.parent = filepath.Join(cgroupRoot, dir, "memory.events")
			c.parentBaseline, _ = readOOMKills(c.parent)
		}
	}
	c.baseline, _ = readOOMKills(c.file) // a missing file counts as 0
	c.seen = c.baseline
	if !v1 {
		c.startWatch() // after the baseline: the watch updates seen
	}
	return c
}

// startWatch watches the v2 file for changes; without inotify (or the
// file) the counter falls back to the read at exit.
func (c *oomCounter) startWatch() {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return
	}
	if _, err := unix.InotifyAddWatch(fd, c.file, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return
	}
	c.watch = os.NewFile(uintptr(fd), "inotify "+c.file) // non-blocking: Close ends a pending Read
	go c.follow(c.watch)
}

// follow reads the count after each batch of events until the watch is
// closed (a removed file sends IN_IGNORED, then nothing more).
func (c *oomCounter) follow(w *os.File) {
	buf := make([]byte, unix.SizeofInotifyEvent+unix.NAME_MAX+1) // the least a read may ask for
	for {
		if _, err := w.Read(buf); err != nil {
			return
		}
		c.update()
	}
}

// update reads the file and keeps the highest count; it reports whether
// the file was there.
func (c *oomCounter) update() bool {
	if c.file == "" {
		return false
	}
	count, err := readOOMKills(c.file)
	if err != nil {
		return false
	}
	c.mu.Lock()
	c.seen = max(c.seen, count)
	c.mu.Unlock()
	return true
}

// killed reports whether the kernel OOM-killed a process in the cgroup
// since the counter was made, and which file counted the kill: the
// highest count seen (the file read once more) against the baseline; with
// the file gone and the init killed by SIGKILL (sigkill), the parent's
// count against its baseline.
func (c *oomCounter) killed(sigkill bool) (bool, string) {
	present := c.update()
	c.mu.Lock()
	seen := c.seen > c.baseline
	c.mu.Unlock()
	if seen {
		return true, c.file
	}
	if present || !sigkill || c.parent == "" {
		return false, ""
	}
	count, err := readOOMKills(c.parent)
	if err != nil || count <= c.parentBaseline {
		return false, ""
	}
	return true, c.parent + " (the container's cgroup was already removed)"
}

// stop ends the watch; killed still answers from what was seen.
func (c *oomCounter) stop() {
	if c.watch != nil {
		_ = c.watch.Close() // an inotify fd: nothing to flush
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
