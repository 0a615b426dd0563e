package runc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// killTree sends SIGKILL to pid and every process descending from it, found
// by the parent links of /proc/<pid>/stat.
func killTree(pid int) {
	// Stop the tree first, until no new process shows up: a stopped process
	// cannot fork, and its children keep their parent link, so none is
	// orphaned (reparented out of sight) before the kill reaches it.
	stopped := map[int]bool{}
	for round := 0; round < 10; round++ {
		fresh := 0
		for _, p := range append(descendants(pid, parentLinks()), pid) {
			if !stopped[p] {
				_ = syscall.Kill(p, syscall.SIGSTOP) // it may have exited
				stopped[p] = true
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	for p := range stopped {
		_ = syscall.Kill(p, syscall.SIGKILL) // it may have exited
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
