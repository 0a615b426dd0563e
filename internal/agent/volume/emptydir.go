package volume

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// emptyDirMode is the mode of an emptyDir, as the kubelet sets it: any
// container user may write.
const emptyDirMode = 0o777

// emptyDirTmpfsFlags: a memory-backed emptyDir's tmpfs honours no setuid
// bit and no device node a container puts there (the kubelet mounts it
// without flags; runc keeps them on the container's bind mount).
const emptyDirTmpfsFlags = unix.MS_NOSUID | unix.MS_NODEV

// setupEmptyDir makes the directory, with a tmpfs on it for medium Memory
// (sized by sizeLimit when set, else the tmpfs default). With an fsGroup the
// directory belongs to that group and new files inherit it (setgid).
func setupEmptyDir(dir string, src *v1.EmptyDirVolumeSource, fsGroup *int64) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	switch src.Medium {
	case v1.StorageMediumDefault:
	case v1.StorageMediumMemory:
		size := ""
		if src.SizeLimit != nil && src.SizeLimit.Value() > 0 {
			size = strconv.FormatInt(src.SizeLimit.Value(), 10)
		}
		if err := ensureTmpfs(dir, "mode=0777", size, emptyDirTmpfsFlags); err != nil {
			return err
		}
	default:
		return errUnsupportedMedium(src.Medium)
	}
	mode := os.FileMode(emptyDirMode)
	if fsGroup != nil {
		if err := os.Lchown(dir, -1, int(*fsGroup)); err != nil {
			return err
		}
		mode |= os.ModeSetgid
	}
	return os.Chmod(dir, mode)
}

type errUnsupportedMedium v1.StorageMedium

func (e errUnsupportedMedium) Error() string {
	return "emptyDir medium " + strconv.Quote(string(e)) + " is not supported (\"\" and Memory are)"
}
