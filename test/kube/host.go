package kube

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/berth-dev/berth/test/harness"
)

// kubepodsCgroups lists kubelet's top cgroup in every hierarchy (cgroup v1
// controllers, or the unified one).
func kubepodsCgroups() []string {
	found, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	if _, err := os.Stat("/sys/fs/cgroup/kubepods"); err == nil {
		found = append(found, "/sys/fs/cgroup/kubepods")
	}
	return found
}

// restoreHost puts back what kubelet changed on the host: its kubepods
// cgroups (kubelet never removes them), its links in /var/log/containers,
// the kernel settings it tuned and the bind mount of its root directory.
// It fails the test for what cannot be removed.
func (k *Kubelet) restoreHost() {
	t := k.T
	for _, c := range kubepodsCgroups() {
		harness.RemoveCgroupTree(c)
	}
	if left := kubepodsCgroups(); len(left) > 0 {
		t.Errorf("kubepods cgroups left after removal (processes inside?): %v", left)
	}
	k.removeLogLinks()
	for name, value := range k.sysctls {
		if err := os.WriteFile("/proc/sys/"+name, []byte(value), 0o644); err != nil {
			t.Errorf("restore sysctl %s=%s: %v", name, value, err)
		}
	}
	k.unmountRoot()
}

// unmountRoot removes the bind mount kubelet makes of its root directory
// (MakeRShared: it needs shared propagation under it) and fails the test
// for any other mount left under the kubelet's directories.
func (k *Kubelet) unmountRoot() {
	for _, m := range harness.MountsUnder(k.Dir) { // deepest first
		if m != k.RootDir {
			k.T.Errorf("mount left under kubelet's directories: %s", m)
		}
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			k.T.Errorf("unmount %s: %v", m, err)
		}
	}
}

// removeLogLinks removes the links kubelet made in /var/log/containers to
// this test's pod logs, and the directory when the test created it.
func (k *Kubelet) removeLogLinks() {
	entries, _ := os.ReadDir(legacyLogDir)
	for _, e := range entries {
		p := filepath.Join(legacyLogDir, e.Name())
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, k.PodLogs+"/") {
			if err := os.Remove(p); err != nil {
				k.T.Errorf("remove log link: %v", err)
			}
		}
	}
	if !k.logDirSeen {
		_ = os.Remove(legacyLogDir) // only when empty
	}
}
