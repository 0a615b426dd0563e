package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// usernsMapping is a POD user namespace of 65536 ids from hostID.
func usernsMapping(hostID uint32) *runtimeapi.UserNamespace {
	m := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: hostID, Length: 65536}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: m, Gids: m}
}

// usernsPod is podConfig in a user namespace, as kubelet asks for one.
func usernsPod(t *testing.T, name string, u *runtimeapi.UserNamespace) *runtimeapi.PodSandboxConfig {
	cfg := podConfig(t, name)
	cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER, UsernsOptions: u},
	}
	return cfg
}

// inUserns gives a container its pod's namespace options and every mount
// the pod's mapping, as kubelet does.
func inUserns(podCfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) *runtimeapi.ContainerConfig {
	u := podCfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	cfg.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: u}}
	for _, m := range cfg.Mounts {
		m.UidMappings, m.GidMappings = u.GetUsernsOptions().GetUids(), u.GetUsernsOptions().GetGids()
	}
	return cfg
}

// hostIDs reads the real uid and gid of a host process.
func hostIDs(t *testing.T, pid int) (uid, gid string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "Uid:":
			uid = f[1]
		case len(f) > 1 && f[0] == "Gid:":
			gid = f[1]
		}
	}
	return uid, gid
}

// TestUserNamespacePod runs a pod in a user namespace (kubelet's
// hostUsers: false): its root is root inside, an unprivileged id on the
// host; the rootfs and an idmapped volume are its own; the pod's network
// namespace is owned by its user namespace (its root binds port 80 with
// the default capabilities, and runc sets a network sysctl there).
func TestUserNamespacePod(t *testing.T) {
	d := startDaemon(t)
	resp, err := d.RT.Status(d.ctx(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range resp.GetRuntimeHandlers() {
		want := h.GetName() != "runc-system" // Debian's runc 1.1 makes no idmapped mounts
		if h.GetFeatures().GetUserNamespaces() != want {
			t.Errorf("handler %q: user_namespaces %v, want %v", h.GetName(), h.GetFeatures().GetUserNamespaces(), want)
		}
	}
	const hostID = 7 << 16
	podCfg := usernsPod(t, "userns", usernsMapping(hostID))
	// A namespaced sysctl the pod's root may set only in a network
	// namespace its user namespace owns.
	podCfg.Linux.Sysctls = map[string]string{"net.ipv4.ping_group_range": "0 0"}
	podID := d.runPod(podCfg)

	vol := t.TempDir() // root's, 0700: the pod's root reaches it only through the idmapped mount
	if err := os.WriteFile(filepath.Join(vol, "hostfile"), []byte("from the host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := sleeper("app")
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: vol},
		// An image volume: its layers are idmapped as the rootfs' are.
		{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: "busybox"}, Readonly: true}}
	id := d.run(podID, podCfg, inUserns(podCfg, cfg))

	if uid, gid := hostIDs(t, d.containerPid(id)); uid != strconv.Itoa(hostID) || gid != strconv.Itoa(hostID) {
		t.Errorf("the container's process on the host: uid %s gid %s, want %d (unprivileged)", uid, gid, hostID)
	}
	for _, c := range []struct{ cmd, want string }{
		{"id -u; id -g", "0\n0"},
		{"cat /proc/self/uid_map /proc/self/gid_map | tr -s ' ' | sed 's/^ //'", fmt.Sprintf("0 %d 65536\n0 %d 65536", hostID, hostID)},
		{"stat -c '%u:%g' / /bin/sh /etc/hostname", "0:0\n0:0\n0:0"},
		{"touch /bin/new && echo rootfs writable", "rootfs writable"},
		{"stat -c '%u:%g' /img/bin/busybox && /img/bin/busybox true && echo ran", "0:0\nran"},
		{"cat /data/hostfile && stat -c '%u:%g' /data/hostfile && echo ok > /data/bypod", "from the host\n0:0"},
		{"nc -l -p 80 </dev/null >/dev/null 2>&1 & sleep 0.3; netstat -ltn | grep -c ':80 '; kill $!", "1"},
		{"cat /proc/sys/net/ipv4/ping_group_range | tr -s '\t ' ' '", "0 0"},
		// sysfs is the pod network namespace's; device nodes work.
		{"ls /sys/class/net | grep -c eth0; head -c 3 /dev/zero | wc -c; echo x > /dev/null && echo null", "1\n3\nnull"},
		// No masked or read-only paths sent: procMount Unmasked, as kubelet
		// sends it for a pod in a user namespace.
		{"grep -c -e ' /proc/timer_list ' -e ' /proc/sys ' /proc/self/mountinfo || true", "0"},
	} {
		out, err := d.execSync(id, 10, "sh", "-c", c.cmd)
		if err != nil || out.GetExitCode() != 0 || strings.TrimSpace(string(out.GetStdout())) != c.want {
			t.Errorf("%s: %q %q (exit %d, %v), want %q", c.cmd, out.GetStdout(), out.GetStderr(), out.GetExitCode(), err, c.want)
		}
	}
	// Through the idmapped volume, the ids on disk are the ones the pod
	// sees: what its root wrote is root's.
	st, err := os.Stat(filepath.Join(vol, "bypod"))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 0 || sys.Gid != 0 {
		t.Errorf("a file the pod's root wrote to the idmapped volume is %d:%d on disk, want 0:0", sys.Uid, sys.Gid)
	}
	d.stopAndRemovePod(podID)
}

// withSubIDs gives user "berth" the subordinate ids first..first+count-1
// in files of the test's own, named by [user_namespaces].
func withSubIDs(first, count int) daemonOption {
	return func(t *testing.T, o *harness.Options) {
		t.Helper()
		dir := t.TempDir()
		entry := fmt.Sprintf("someone:100000:65536\nberth:%d:%d\n", first, count)
		for _, f := range []string{"subuid", "subgid"} {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(entry), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		base, err := os.ReadFile(o.Config)
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(t.TempDir(), "config.toml")
		extra := fmt.Sprintf("\n[user_namespaces]\nsubuid_file = %q\nsubgid_file = %q\n", filepath.Join(dir, "subuid"), filepath.Join(dir, "subgid"))
		if err := os.WriteFile(cfg, append(base, extra...), 0o600); err != nil {
			t.Fatal(err)
		}
		o.Config = cfg
	}
}

// TestUserNamespaceRefusals: each bad mapping is refused before any side
// effect, with the field and the reason; a mapping that overlaps a running
// pod's is refused until that pod stops, and after a daemon restart too.
func TestUserNamespaceRefusals(t *testing.T) {
	const first = 16 << 16
	d := startDaemon(t, withSubIDs(first, 4<<16))
	two := usernsMapping(first)
	two.Uids = append(two.Uids, &runtimeapi.IDMapping{ContainerId: 65536, HostId: first + 65536, Length: 1})
	notRoot := usernsMapping(first)
	notRoot.Gids = []*runtimeapi.IDMapping{{ContainerId: 1, HostId: first, Length: 65536}}
	for _, c := range []struct {
		name    string
		u       *runtimeapi.UserNamespace
		handler string
		code    codes.Code
		says    string
	}{
		{"mode CONTAINER", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_CONTAINER}, "", codes.InvalidArgument, "userns_options.mode: CONTAINER: only POD and NODE"},
		{"mode TARGET", &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_TARGET}, "", codes.InvalidArgument, "only POD and NODE"},
		{"two uid mappings", two, "", codes.InvalidArgument, "userns_options.uids: 2 mappings: exactly one"},
		{"gids not from container id 0", notRoot, "", codes.InvalidArgument, "userns_options.gids: container id 1"},
		{"the host's root", usernsMapping(0), "", codes.InvalidArgument, "host id 0"},
		{"outside the subordinate ids", usernsMapping(first + 4<<16), "", codes.InvalidArgument, "outside the subordinate range 1048576-1310719"},
		{"a runc without idmapped mounts", usernsMapping(first), "runc-system", codes.FailedPrecondition, `runtime handler "runc-system" does not support user namespaces`},
	} {
		_, err := d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: usernsPod(t, "bad", c.u), RuntimeHandler: c.handler})
		if msg := wantCode(t, c.name, err, c.code); !strings.Contains(msg, c.says) {
			t.Errorf("%s: %q, want it to say %q", c.name, msg, c.says)
		}
	}
	hostNet := usernsPod(t, "hostnet", usernsMapping(first))
	hostNet.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
	_, err := d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: hostNet})
	if msg := wantCode(t, "host network", err, codes.InvalidArgument); !strings.Contains(msg, "namespace_options.network: NODE") {
		t.Errorf("host network: %q", msg)
	}

	// A pod sharing one PID namespace: berth-pause runs in the user namespace too.
	podA := usernsPod(t, "a", usernsMapping(first))
	podA.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	a := d.runPod(podA)
	ctr := d.run(a, podA, inUserns(podA, sleeper("app")))
	// A create that fails after its rootfs is mounted (a mount mapped
	// unlike the pod) leaves nothing in the pod's rootfs directory.
	bad := inUserns(podA, sleeper("bad"))
	other := usernsMapping(first + 2<<16)
	bad.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: t.TempDir(), UidMappings: other.Uids, GidMappings: other.Gids}}
	_, err = d.RT.CreateContainer(d.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: a, Config: bad, SandboxConfig: podA})
	if msg := wantCode(t, "a mount mapped unlike its pod", err, codes.InvalidArgument); !strings.Contains(msg, "differ from the pod's user namespace mapping") {
		t.Errorf("a mount mapped unlike its pod: %q", msg)
	}
	if entries, _ := os.ReadDir(filepath.Join(d.State, "userns", a)); len(entries) != 2 {
		t.Errorf("%s/userns/%s after a failed create: %v, want berth-pause's and app's only", d.State, a, entries)
	}
	overlapping := usernsPod(t, "b", usernsMapping(first+65535))
	_, err = d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: overlapping})
	if msg := wantCode(t, "overlap", err, codes.FailedPrecondition); !strings.Contains(msg, "overlap those of pod sandbox "+a) {
		t.Errorf("overlap: %q, want it to name pod sandbox %s", msg, a)
	}
	d.Stop()
	d.Start()
	if out, err := d.execSync(ctr, 10, "sh", "-c", "tr -d \"\\\\000\" < /proc/1/cmdline; echo; id -u"); err != nil || string(out.GetStdout()) != "/berth-pause\n0\n" {
		t.Errorf("after a restart: %q %v, want berth-pause as PID 1 and root", out.GetStdout(), err)
	}
	_, err = d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: overlapping})
	wantCode(t, "overlap after a restart", err, codes.FailedPrecondition)
	if _, err := d.RT.StopPodSandbox(d.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: a}); err != nil {
		t.Fatal(err)
	}
	b := d.runPod(overlapping) // a stopped pod's ids are free again
	d.stopAndRemovePod(b)
	d.stopAndRemovePod(a)
	if entries, err := os.ReadDir(filepath.Join(d.State, "userns")); err != nil || len(entries) != 0 {
		t.Errorf("%s/userns after the pods' removal: %v (%v), want empty", d.State, entries, err)
	}
}
