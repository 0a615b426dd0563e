package network

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/userns"
)

// TestPinUserNamespace pins a user namespace with the others inside it:
// the pinned user namespace has the mapping, owns the network namespace
// (ioctl NS_GET_USERNS, as lsns shows it), and the hostname is set.
func TestPinUserNamespace(t *testing.T) {
	requireRoot(t)
	dir := filepath.Join(t.TempDir(), "ns")
	t.Cleanup(func() { _ = Unpin(dir) })
	m := userns.Mapping{UIDs: []userns.IDMap{{ContainerID: 0, HostID: 3 << 16, Length: 65536}},
		GIDs: []userns.IDMap{{ContainerID: 0, HostID: 4 << 16, Length: 65536}}}
	ns, err := Pin(PinOptions{Dir: dir, Net: true, IPC: true, UTS: true, Hostname: "userns-pod",
		User: &m, Holder: []string{"/bin/sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	for kind, p := range map[string]string{"user": ns.User, "net": ns.Net, "ipc": ns.IPC, "uts": ns.UTS} {
		if !IsPinned(p) {
			t.Errorf("%s pin %s is not an nsfs mount", kind, p)
		}
	}
	// A process that joins the user namespace reads its mapping.
	out, err := exec.Command("nsenter", "--user="+ns.User, "--", "/bin/busybox", "cat", "/proc/self/uid_map", "/proc/self/gid_map").CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}
	if f := strings.Fields(string(out)); strings.Join(f, " ") != "0 196608 65536 0 262144 65536" {
		t.Errorf("maps in the pinned user namespace = %q", out)
	}
	// Joining the network namespace from inside the user namespace works
	// only if that user namespace owns it.
	out, err = exec.Command("nsenter", "--user="+ns.User, "--net="+ns.Net, "--uts="+ns.UTS, "--",
		"/bin/busybox", "sh", "-c", "hostname && ip link set lo up && echo up").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "userns-pod\nup") {
		t.Errorf("inside the pod's namespaces as its root: %q (%v)", out, err)
	}
	if err := Unpin(dir); err != nil {
		t.Fatal(err)
	}
	if m := mountsUnder(t, dir); len(m) != 0 {
		t.Errorf("mounts left after Unpin: %v", m)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("pin dir left after Unpin")
	}
}
