package pod

import (
	"os"
	"path/filepath"

	"github.com/berth-dev/berth/internal/oci"
)

// removeEmptyDefaultCgroup removes berth's default cgroupfs parent (the
// home of pods that name no cgroup parent; kubelet always names one) from
// every hierarchy once it holds nothing; rmdir fails harmlessly while it is
// in use. Under the systemd driver the default parent is a slice unit that
// systemd owns: berth leaves it to systemd.
func (s *Service) removeEmptyDefaultCgroup() {
	if s.cfg.SystemdCgroup {
		return
	}
	roots, _ := filepath.Glob(filepath.Join(s.cgroupRoot, "*"))
	roots = append(roots, s.cgroupRoot)
	for _, root := range roots {
		_ = os.Remove(filepath.Join(root, oci.DefaultCgroupParent))
	}
}
