package volume

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The tmpfs under secret, downwardAPI and projected volumes: the agent
// writes every file there, so nothing setuid or a device belongs in it.
const (
	filesTmpfsOptions = "mode=0755"
	filesTmpfsFlags   = unix.MS_NOSUID | unix.MS_NODEV
)

const mountInfoPath = "/proc/self/mountinfo"

// ensureTmpfs mounts a tmpfs on dir unless one is already there; one
// there without nosuid or nodev that flags ask for (mounted by an older
// agent) gets them.
func ensureTmpfs(dir, options, size string, flags uintptr) error {
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		return hardenMount(dir, flags)
	}
	if size != "" {
		options += ",size=" + size
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, options); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// hardenMount remounts the mount at dir with nosuid and nodev when flags
// ask for them and it lacks one (the mount's other flags kept).
func hardenMount(dir string, flags uintptr) error {
	want := flags & (unix.MS_NOSUID | unix.MS_NODEV)
	if want == 0 {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	have := uintptr(0)
	for _, f := range []struct{ st, ms uintptr }{{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_RDONLY, unix.MS_RDONLY}} {
		if uintptr(st.Flags)&f.st != 0 {
			have |= f.ms
		}
	}
	if have&want == want {
		return nil
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|have|want, ""); err != nil {
		return fmt.Errorf("remount %s nosuid,nodev: %w", dir, err)
	}
	return nil
}

// isMountPoint reports whether something is mounted exactly at dir.
func isMountPoint(dir string) (bool, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	points, err := mountPoints()
	if err != nil {
		return false, err
	}
	return slices.Contains(points, real), nil
}

// mountPoints lists the mount points of this mount namespace, one entry
// per mount (a point mounted over twice appears twice).
func mountPoints() ([]string, error) {
	f, err := os.Open(mountInfoPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			return nil, fmt.Errorf("%s: short line %q", mountInfoPath, sc.Text())
		}
		points = append(points, unescapeMountPath(fields[4]))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", mountInfoPath, err)
	}
	return points, nil
}

// unescapeMountPath undoes the kernel's octal escapes (\040 for a blank,
// \011, \012, \134) in a mountinfo path.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountsUnder lists the mounts strictly below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	points, err := mountPoints()
	if err != nil {
		return nil, err
	}
	var under []string
	for _, p := range points {
		if strings.HasPrefix(p, real+"/") {
			under = append(under, p)
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	return under, nil
}

// unmountAllUnder unmounts everything below dir, stacked mounts included,
// and fails if anything is left.
func unmountAllUnder(dir string) error {
	const maxRounds = 8
	for round := 0; round < maxRounds; round++ {
		under, err := mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(under) == 0 {
			return nil
		}
		var errs []error
		for _, p := range under {
			errs = append(errs, unmount(p))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	left, _ := mountsUnder(dir)
	return fmt.Errorf("mounts still under %s: %s", dir, strings.Join(left, ", "))
}

// unmount detaches a mount; a busy one is detached lazily. Already gone is
// fine.
func unmount(path string) error {
	err := unix.Unmount(path, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(path, unix.MNT_DETACH)
	}
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}
