package pod

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/cgroupstats"
)

type fileStat struct{ dev, ino, blocks uint64 }

// statOf reads the identity and allocation of a file from its FileInfo.
func statOf(info os.FileInfo) (fileStat, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, false
	}
	return fileStat{dev: uint64(st.Dev), ino: st.Ino, blocks: uint64(st.Blocks)}, true
}

// filesystemOf is the size, inode count and device of the filesystem that
// holds path.
func filesystemOf(path string) (Filesystem, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return Filesystem{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Filesystem{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return Filesystem{
		Device:        cgroupstats.DeviceName(uint64(unix.Major(st.Dev)), uint64(unix.Minor(st.Dev))),
		CapacityBytes: fs.Blocks * uint64(fs.Bsize),
		Inodes:        fs.Files,
		InodesFree:    fs.Ffree,
	}, nil
}
