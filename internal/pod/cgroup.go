package pod

import (
	"os"
	"path/filepath"
)

// defaultCgroupParent holds the containers of pods that name no cgroup parent
// (kubelet always names one).
const defaultCgroupParent = "/berth"

// removeEmptyCgroups removes berth's default parent cgroup from every
// hierarchy once it holds nothing; rmdir fails harmlessly while it is in use.
func removeEmptyCgroups(rel string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	roots = append(roots, "/sys/fs/cgroup")
	for _, root := range roots {
		_ = os.Remove(filepath.Join(root, rel))
	}
}
