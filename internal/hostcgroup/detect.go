package hostcgroup

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Swap is the pseudo controller name of swap accounting.
const Swap = "memsw"

// Controllers are the cgroup controllers containers can use here.
type Controllers struct {
	// Unified is true on a cgroup v2 host.
	Unified bool
	names   map[string]bool
}

// All is a Controllers that has every controller: for hosts where
// detection is not wanted (tests of spec building).
func All() Controllers { return Controllers{names: nil} }

// Has reports whether the named controller is usable. On v2, "blkio" and
// "io" name the same controller.
func (c Controllers) Has(name string) bool {
	if c.names == nil {
		return true
	}
	if name == "blkio" || name == "io" {
		return c.names["blkio"] || c.names["io"]
	}
	return c.names[name]
}

// Names lists the usable controllers, sorted ("all" for All).
func (c Controllers) Names() []string {
	if c.names == nil {
		return []string{"all"}
	}
	var out []string
	for n, ok := range c.names {
		if ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Detect reads this host's cgroup mounts.
func Detect() (Controllers, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return Controllers{}, fmt.Errorf("cgroup controllers: %w", err)
	}
	defer f.Close()
	own, _ := os.ReadFile("/proc/self/cgroup")
	return detect(f, string(own), "/sys/fs/cgroup")
}

// detect works on a mountinfo listing; the v2 files are read below root
// (the cgroup2 mount point when it is the unified hierarchy).
func detect(mountinfo io.Reader, ownCgroup, root string) (Controllers, error) {
	mounts, err := parseMounts(mountinfo)
	if err != nil {
		return Controllers{}, err
	}
	for _, m := range mounts {
		if m.fsType == "cgroup2" && m.point == root {
			return detectUnified(root, ownCgroup)
		}
	}
	c := Controllers{names: map[string]bool{}}
	for _, m := range mounts {
		if m.fsType != "cgroup" {
			continue
		}
		for _, opt := range strings.Split(m.superOpts, ",") {
			if knownV1[opt] {
				c.names[opt] = true
			}
		}
		if slices.Contains(strings.Split(m.superOpts, ","), "memory") && exists(filepath.Join(m.point, "memory.memsw.limit_in_bytes")) {
			c.names[Swap] = true
		}
	}
	return c, nil
}

// knownV1 are the v1 controllers whose settings a spec can carry.
var knownV1 = map[string]bool{
	"cpu": true, "cpuacct": true, "cpuset": true, "memory": true, "hugetlb": true,
	"pids": true, "rdma": true, "blkio": true, "devices": true, "freezer": true,
}

func detectUnified(root, ownCgroup string) (Controllers, error) {
	data, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return Controllers{}, fmt.Errorf("cgroup controllers: %w", err)
	}
	c := Controllers{Unified: true, names: map[string]bool{}}
	for _, n := range strings.Fields(string(data)) {
		c.names[n] = true
	}
	if c.names["memory"] && swapFileBelow(root, ownCgroup) {
		c.names[Swap] = true
	}
	return c, nil
}

// swapFileBelow looks for memory.swap.max in this process's cgroup (the
// "0::/path" line), else in any direct child of the root (the root itself
// has none).
func swapFileBelow(root, ownCgroup string) bool {
	for _, line := range strings.Split(ownCgroup, "\n") {
		if rel, ok := strings.CutPrefix(line, "0::"); ok && rel != "/" {
			if exists(filepath.Join(root, filepath.Clean("/"+rel), "memory.swap.max")) {
				return true
			}
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.IsDir() && exists(filepath.Join(root, e.Name(), "memory.swap.max")) {
			return true
		}
	}
	return false
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

type mount struct {
	point, fsType, superOpts string
}

// parseMounts reads the mount point, file system type and super options
// of each mountinfo line ("... mountpoint opts [optional...] - type source superopts").
func parseMounts(r io.Reader) ([]mount, error) {
	var out []mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || len(fields) < sep+4 {
			return nil, fmt.Errorf("cgroup controllers: mountinfo line %q: malformed", sc.Text())
		}
		out = append(out, mount{point: fields[4], fsType: fields[sep+1], superOpts: fields[sep+3]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cgroup controllers: mountinfo: %w", err)
	}
	return out, nil
}
