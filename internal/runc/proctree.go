package runc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// killTree sends SIGKILL to pid and every process descending from it, by
// the parent links of /proc/<pid>/stat. It walks again after each round of
// kills so that children forked meanwhile are caught too.
func killTree(pid int) {
	killed := map[int]bool{}
	for round := 0; round < 5; round++ {
		victims := descendants(pid, parentLinks())
		if !killed[pid] {
			victims = append(victims, pid)
		}
		fresh := 0
		for _, p := range victims {
			if killed[p] {
				continue
			}
			syscall.Kill(p, syscall.SIGKILL) //nolint:errcheck // it may have exited
			killed[p] = true
			fresh++
		}
		if fresh == 0 {
			return
		}
	}
}

// descendants lists every process below root in parents (child → parent).
func descendants(root int, parents map[int]int) []int {
	children := map[int][]int{}
	for child, parent := range parents {
		children[parent] = append(children[parent], child)
	}
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// parentLinks maps every visible process to its parent.
func parentLinks() map[int]int {
	links := map[int]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return links
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if ppid, ok := parseStatPPID(data); ok {
			links[pid] = ppid
		}
	}
	return links
}

// parseStatPPID reads the parent pid from the contents of /proc/<pid>/stat.
// The command name is in parentheses and may itself hold ") ", so the
// fields are counted from the last ')'.
func parseStatPPID(stat []byte) (int, bool) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, false
	}
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 2 { // state, ppid
		return 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0, false
	}
	return ppid, true
}
