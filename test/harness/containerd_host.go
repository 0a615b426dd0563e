package harness

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/testimage"
)

// ContainerdHostDirs are directories outside a private containerd's own
// that containerd (1.6 and 2.x) creates when missing: the shims' sockets
// (/run/containerd/s is fixed in the shim) and libcni's result cache (the
// CRI plugin sets no cache dir). Whoever starts one removes those it
// created, once empty (AbsentDirs, RemoveEmptyDirs).
var ContainerdHostDirs = []string{"/run/containerd/s", "/run/containerd", "/var/lib/cni/results", "/var/lib/cni"}

// ContainerdNamespaceCgroups are the cgroups of the CRI namespace,
// /sys/fs/cgroup/[<hierarchy>/]k8s.io: containerd 1.6 puts a container
// that has no cgroup parent there (<namespace>/<id>) and never removes the
// namespace's own cgroup. Whoever starts one without cgroup parents
// removes those it created, once empty (AbsentDirs, RemoveEmptyDirs).
func ContainerdNamespaceCgroups() []string {
	out := []string{filepath.Join("/sys/fs/cgroup", CRINamespace)}
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range entries {
		if e.IsDir() { // not the v1 aliases (cpu -> cpu,cpuacct), which are links
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name(), CRINamespace))
		}
	}
	return out
}

// AbsentDirs returns those of dirs that do not exist now.
func AbsentDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			out = append(out, d)
		}
	}
	return out
}

// RemoveEmptyDirs removes each of dirs that is empty, in order: something
// else may be using one that is not.
func RemoveEmptyDirs(dirs []string) {
	for _, d := range dirs {
		_ = os.Remove(d) // only when empty
	}
}

// WriteContainerdImages writes a `docker save` archive to path of the
// sandbox image ContainerdPauseRef (busybox with pauseBinary, berth-pause,
// as /pause, its entrypoint) and of images.
func WriteContainerdImages(path, pauseBinary string, images ...testimage.Options) error {
	pause, err := os.ReadFile(pauseBinary)
	if err != nil {
		return fmt.Errorf("pause image: %w", err)
	}
	all := append([]testimage.Options{{
		Name: ContainerdPauseRef, Entrypoint: []string{"/pause"}, ExtraFiles: map[string]string{"/pause": string(pause)},
	}}, images...)
	return testimage.WriteDockerArchive(path, all...)
}

// Import imports a `docker save` archive into the CRI namespace with the
// flavour's ctr.
func (c *Containerd) Import(archive string) error {
	out, err := exec.Command(c.Flavour.Ctr, "-a", c.Socket, "-n", CRINamespace, "images", "import", archive).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr images import %s: %w\n%s", archive, err, out)
	}
	return nil
}

// ImportImages imports an archive of WriteContainerdImages and checks that
// the CRI plugin lists the sandbox image and each of refs. containerd 2.x's
// CRI plugin learns of an imported image from an event, after ctr has
// returned: each image is asked for until it shows, for up to 10 s.
func (c *Containerd) ImportImages(archive string, refs ...string) error {
	if err := c.Import(archive); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ref := range append([]string{ContainerdPauseRef}, refs...) {
		for {
			resp, err := c.Img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			if err != nil {
				return fmt.Errorf("the CRI plugin's status of %s after the import: %w", ref, err)
			}
			if resp.GetImage() != nil {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the CRI plugin does not list %s 10 s after the import", ref)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// ShimSockets lists the sockets left of the shims of the sandboxes ids:
// the runc v2 shim listens on /run/containerd/s/<sha256 of
// "<containerd address>/<namespace>/<sandbox id>">, and with -debug (a
// containerd logging at debug level) also on the same name with "/debug"
// added before the hash.
func (c *Containerd) ShimSockets(ids map[string]bool) []string {
	var out []string
	for id := range ids {
		name := filepath.Join(c.Socket, CRINamespace, id)
		for _, n := range []string{name, filepath.Join(name, "debug")} {
			path := filepath.Join("/run/containerd/s", fmt.Sprintf("%x", sha256.Sum256([]byte(n))))
			if _, err := os.Lstat(path); err == nil {
				out = append(out, path)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ContainerdCNIResults lists libcni's cached results of a containerd's
// sandboxes: those of network, and those of the loopback network
// containerd sets up in every sandbox (cni-loopback-<sandbox id>-lo).
func ContainerdCNIResults(network string, ids map[string]bool) []string {
	files, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", network+"-*"))
	for id := range ids {
		path := filepath.Join("/var/lib/cni/results", "cni-loopback-"+id+"-lo")
		if _, err := os.Lstat(path); err == nil {
			files = append(files, path)
		}
	}
	sort.Strings(files)
	return files
}
