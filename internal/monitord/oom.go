package monitord

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/berth-dev/berth/internal/cgrouppath"
)

// cgroupRoot is where cgroup hierarchies are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// oomCounter reads the kernel's OOM kill count of one container cgroup.
type oomCounter struct {
	file     string // memory.oom_control (v1) or memory.events (v2); "" = unknown
	baseline uint64
}

// newOOMCounter locates the counter of cgroupPath (an OCI cgroupsPath in
// either driver's form) and records its current value.
func newOOMCounter(cgroupPath string) oomCounter {
	rel, err := cgrouppath.Dir(cgroupPath)
	if err != nil { // none, or not one berth builds: OOM kills go unnoticed
		return oomCounter{}
	}
	var file string
	if st, err := os.Stat(filepath.Join(cgroupRoot, "memory")); err == nil && st.IsDir() {
		file = filepath.Join(cgroupRoot, "memory", rel, "memory.oom_control")
	} else {
		file = filepath.Join(cgroupRoot, rel, "memory.events")
	}
	count, _ := readOOMKills(file) // a missing file counts as 0
	return oomCounter{file: file, baseline: count}
}

// killed reports whether the kernel OOM-killed a process in the cgroup
// since the counter was made.
func (c oomCounter) killed() bool {
	if c.file == "" {
		return false
	}
	count, err := readOOMKills(c.file)
	return err == nil && count > c.baseline
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
