package pod

import (
	"os"
	"syscall"
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
