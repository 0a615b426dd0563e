package manifest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/berth-dev/berth/internal/trusted"
)

// CheckTrustedDir checks that a directory the agent is to watch can be
// changed by no one but root: whoever can write a watched directory, or
// replace one of the directories above it, runs pods as root (hostPath:
// /, privileged). dir must be absolute and clean; every component, from /
// down, must be a directory (not a symbolic link: give the real path)
// owned by root (or by the user the agent runs as) and not writable by
// group or others, as sshd's StrictModes asks of a user's ~/.ssh. One
// exception: a directory above dir may be world-writable when it is
// sticky and owned by root (/tmp), since then no one else can rename or
// remove what root made in it.
func CheckTrustedDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("watched directory %q: want an absolute, clean path", dir)
	}
	if err := trusted.CheckDirPath(dir, "whoever can change it decides which pods run as root"); err != nil {
		return fmt.Errorf("watched directory %s: %w", dir, err)
	}
	return nil
}

// readTrustedFile reads a manifest file of a watched directory: through a
// symbolic link only to a directory CheckTrustedDir accepts, and only a
// regular file owned by root (or the agent's user) and not writable by
// group or others — checked on the descriptor it then reads.
func readTrustedFile(path string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if real != path {
		if err := CheckTrustedDir(filepath.Dir(real)); err != nil {
			return nil, fmt.Errorf("symbolic link to %s: %w", real, err)
		}
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := trusted.CheckFile(f); err != nil {
		return nil, fmt.Errorf("%s %w: whoever can change it decides which pods run as root", real, err)
	}
	return io.ReadAll(f)
}
