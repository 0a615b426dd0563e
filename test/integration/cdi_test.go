package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// withCDI gives the daemon a CDI spec directory of the test's own: one
// spec of vendor berth.test, class dev, whose device "zero" is a node the
// test made (a character device 1:5, as /dev/zero) at /dev/berth-zero, with
// an env entry and a read-only mount of a file the test wrote.
func withCDI(specDir string) daemonOption {
	return func(t *testing.T, o *harness.Options) {
		t.Helper()
		base, err := os.ReadFile(o.Config)
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(t.TempDir(), "config.toml")
		extra := fmt.Sprintf("\n[cdi]\nspec_dirs = [%q]\n", specDir)
		if err := os.WriteFile(cfg, append(base, extra...), 0o600); err != nil {
			t.Fatal(err)
		}
		o.Config = cfg
	}
}

func writeCDISpec(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	node := filepath.Join(dir, "zero-node")
	if err := unix.Mknod(node, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "device-info")
	if err := os.WriteFile(file, []byte("from the CDI spec\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`cdiVersion: "0.6.0"
kind: berth.test/dev
devices:
- name: zero
  containerEdits:
    deviceNodes:
    - path: /dev/berth-zero
      hostPath: %s
    env:
    - BERTH_CDI_DEVICE=zero
    mounts:
    - hostPath: %s
      containerPath: /etc/berth-device-info
      options: [ro, bind]
`, node, file)
	specDir := filepath.Join(dir, "cdi")
	if err := os.Mkdir(specDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(specDir, "berth-test.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return specDir
}

// TestCDIDevices: a container asking for a CDI device, by the CRI field or
// by a cdi.k8s.io/ annotation, gets the spec's device node (readable, the
// cgroup lets it through), env and mount; an unknown device or a name that
// is not qualified is InvalidArgument naming it, and leaves nothing behind.
func TestCDIDevices(t *testing.T) {
	specDir := writeCDISpec(t)
	d := startDaemon(t, withCDI(specDir))
	podCfg := podConfig(t, "cdi")
	podID := d.runPod(podCfg)
	script := "head -c 4 /dev/berth-zero | od -An -tx1; echo $BERTH_CDI_DEVICE; cat /etc/berth-device-info; sleep 1000"
	byField := shell("by-field", script)
	byField.CDIDevices = []*runtimeapi.CDIDevice{{Name: "berth.test/dev=zero"}}
	byAnnotation := shell("by-annotation", script)
	byAnnotation.Annotations = map[string]string{"cdi.k8s.io/test": "berth.test/dev=zero"}
	for _, cfg := range []*runtimeapi.ContainerConfig{byField, byAnnotation} {
		id := d.run(podID, podCfg, cfg)
		want := []string{"stdout F  00 00 00 00", "stdout F zero", "stdout F from the CDI spec"}
		if !eventually(10*time.Second, func() bool { return hasLines(readLog(t, logPath(podCfg, cfg)), want...) }) {
			t.Errorf("%s: log %+v, want %q", cfg.Metadata.Name, readLog(t, logPath(podCfg, cfg)), want)
		}
		if out, err := d.execSync(id, 10, "sh", "-c", "echo x > /etc/berth-device-info"); err == nil && out.GetExitCode() == 0 {
			t.Errorf("%s: the spec's read-only mount is writable", cfg.Metadata.Name)
		}
	}

	bundlesBefore := dirNames(filepath.Join(d.State, "bundles"))
	for _, tc := range []struct {
		name, want string
		set        func(*runtimeapi.ContainerConfig)
	}{
		{"unknown", `cdi_devices[0]: CDI device "berth.test/dev=nine": no spec in ` + specDir + " defines it",
			func(c *runtimeapi.ContainerConfig) {
				c.CDIDevices = []*runtimeapi.CDIDevice{{Name: "berth.test/dev=nine"}}
			}},
		{"unqualified", `annotations[cdi.k8s.io/x]: CDI device "zero"`,
			func(c *runtimeapi.ContainerConfig) { c.Annotations = map[string]string{"cdi.k8s.io/x": "zero"} }},
	} {
		cfg := shell(tc.name, "true")
		tc.set(cfg)
		_, err := d.RT.CreateContainer(d.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: podCfg})
		if msg := wantCode(t, tc.name, err, codes.InvalidArgument); !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q, want it to say %q", tc.name, msg, tc.want)
		}
	}
	if got := dirNames(filepath.Join(d.State, "bundles")); len(got) != len(bundlesBefore) {
		t.Errorf("bundles after the refused creates: %v, want %v", got, bundlesBefore)
	}
	if got := dirNames(filepath.Join(d.Root, "containers")); len(got) != 2 {
		t.Errorf("container records after the refused creates: %v, want the two that run", got)
	}
}
