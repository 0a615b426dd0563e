package monitord

import (
	"bufio"
	"bytes"
	"os"
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
// On cgroup v2 it also watches memory.events (inotify, as containerd's
// shim does): the kernel announces every oom_kill there, and under the
// systemd driver systemd removes the container's scope, and the file with
// it, as soon as its last process is gone — possibly before the monitor
// has reaped the init. The highest count seen while the cgroup existed
// counts as much as the count read at exit.
type oomCounter struct {
	file     string // memory.oom_control (v1) or memory.events (v2); "" = unknown
	baseline uint64

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
	if st, err := os.Stat(filepath.Join(cgroupRoot, "memory")); err == nil && st.IsDir() {
		c.file = filepath.Join(cgroupRoot, "memory", rel, "memory.oom_control")
	} else {
		c.file = filepath.Join(cgroupRoot, rel, "memory.events")
		c.startWatch()
	}
	c.baseline, _ = readOOMKills(c.file) // a missing file counts as 0
	c.seen = c.baseline
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
	buf := make([]byte, 4*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		if _, err := w.Read(buf); err != nil {
			return
		}
		c.update()
	}
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
// since the counter was made: it reads the file once more, then compares
// the highest count seen with the baseline.
func (c *oomCounter) killed() bool {
	c.update()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen > c.baseline
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
