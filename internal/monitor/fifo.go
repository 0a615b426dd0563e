package monitor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/berth-dev/berth/internal/errdefs"
)

// OpenFIFO opens the FIFO name in dir for reading, without blocking for a
// writer and without following a symlink; what is not a FIFO is refused.
// A missing FIFO is ErrNotFound. The descriptor is non-blocking.
func OpenFIFO(dir, name string) (*os.File, error) {
	path := filepath.Join(dir, name)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("fifo %s: %w", path, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fifo %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(fd)
		return nil, fmt.Errorf("fifo %s: not a named pipe: %w", path, errdefs.ErrFailedPrecondition)
	}
	return os.NewFile(uintptr(fd), path), nil
}
