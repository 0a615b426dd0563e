package imagegc

import "golang.org/x/sys/unix"

// Statfs measures the filesystem holding path: its size and the bytes an
// unprivileged user may still write (kubelet's cAdvisor reports these).
func Statfs(path string) (FsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsStats{}, err
	}
	bsize := uint64(st.Bsize)
	return FsStats{Capacity: st.Blocks * bsize, Available: st.Bavail * bsize}, nil
}
