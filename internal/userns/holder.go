package userns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Holder is a short-lived child process in a new user namespace with
// Mapping, and in new namespaces of the kinds asked (network, IPC, UTS),
// which that user namespace owns. berth pins its namespaces from
// NSPath, then closes it: nothing runs in them until a container joins.
type Holder struct {
	cmd *exec.Cmd
}

// StartHolder runs argv (any program that waits for a signal: berth-pause)
// as the holder. flags are further clone flags
// (CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS). Go's own mapping writes would
// come before the exec, when the child runs as the unmapped host root of
// the new namespace and may not reach a binary under a root-only
// directory; the maps are written here after the exec instead, which a
// parent with CAP_SETUID and CAP_SETGID may do at any time.
func StartHolder(argv []string, flags uintptr, m Mapping) (*Holder, error) {
	if len(m.UIDs) == 0 || len(m.GIDs) == 0 || len(argv) == 0 {
		return nil, fmt.Errorf("user namespace holder: no mapping or no program")
	}
	cmd := exec.Command(argv[0], argv[1:]...)

	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWUSER | flags,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("user namespace holder %s: %w", argv[0], err)
	}
	h := &Holder{cmd: cmd}
	pid := strconv.Itoa(cmd.Process.Pid)
	for _, f := range []struct {
		file string
		maps []IDMap
	}{{"uid_map", m.UIDs}, {"gid_map", m.GIDs}} {
		lines := make([]string, len(f.maps))
		for i, im := range f.maps {
			lines[i] = im.String()
		}
		if err := os.WriteFile("/proc/"+pid+"/"+f.file, []byte(strings.Join(lines, "\n")+"\n"), 0); err != nil {
			h.Close()
			return nil, fmt.Errorf("user namespace holder: %s: %w", f.file, err)
		}
	}
	return h, nil
}

// NSPath is the holder's namespace file of kind ("user", "net", ...).
func (h *Holder) NSPath(kind string) string {
	return fmt.Sprintf("/proc/%d/ns/%s", h.cmd.Process.Pid, kind)
}

// Close kills the holder and reaps it.
func (h *Holder) Close() {
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
}

// probeMapping is the mapping the idmap probe's namespace gets: any that
// is not the identity would do.
var probeMapping = Mapping{UIDs: []IDMap{{0, 1 << 30, 65536}}, GIDs: []IDMap{{0, 1 << 30, 65536}}}

// CanIDMap reports, as an error, whether the kernel can make an idmapped
// mount of dir's filesystem (overlayfs' lower layers and volumes must be
// idmapped for a pod in a user namespace). holder is StartHolder's argv.
func CanIDMap(dir string, holder []string) error {
	tree, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("idmapped mounts: open_tree %s: %w", dir, err)
	}
	defer unix.Close(tree)
	h, err := StartHolder(holder, 0, probeMapping)
	if err != nil {
		return err
	}
	defer h.Close()
	ns, err := os.Open(h.NSPath("user"))
	if err != nil {
		return fmt.Errorf("idmapped mounts: %w", err)
	}
	defer ns.Close()
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(ns.Fd())}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		if errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("idmapped mounts: the kernel has no mount_setattr: %w", err)
		}
		return fmt.Errorf("idmapped mounts: %s: the filesystem cannot be idmapped: %w", dir, err)
	}
	return nil
}
