package kubelet

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/harness"
)

// kubelet is one standalone kubelet process with its own directories.
type kubelet struct {
	t          *testing.T
	bin        string
	dir        string // config, resolv.conf, volume plugins, certificates
	rootDir    string // --root-dir
	manifests  string // staticPodPath
	podLogs    string // podLogsDir
	logPath    string // kubelet's stderr
	nodeName   string
	healthz    string // http://127.0.0.1:<port>/healthz
	cmd        *exec.Cmd
	exited     chan struct{}
	sysctls    map[string]string // kernel settings before kubelet touched them
	logDirSeen bool              // /var/log/containers existed before the test

	stopRegistered bool
}

// kubeletSysctls are the kernel settings kubelet sets (setupKernelTunables);
// the test restores them.
var kubeletSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
	"kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// legacyLogDir is where kubelet links container logs, whatever its flags.
const legacyLogDir = "/var/log/containers"

// newKubelet prepares a kubelet for the daemon's socket and registers the
// host cleanup, which runs after the daemon's (it is registered first).
// It refuses to run where a kubepods cgroup already exists: that belongs
// to another kubelet.
func newKubelet(t *testing.T, bin string) *kubelet {
	t.Helper()
	if left := kubepodsCgroups(); len(left) > 0 {
		t.Fatalf("kubepods cgroups exist before the test (another kubelet, or a crashed run): %v", left)
	}
	dir := t.TempDir()
	k := &kubelet{
		t: t, bin: bin, dir: dir,
		rootDir:   filepath.Join(dir, "root"),
		manifests: filepath.Join(dir, "manifests"),
		podLogs:   filepath.Join(dir, "pods"),
		logPath:   filepath.Join(dir, "kubelet.log"),
		nodeName:  "berth-kubelet-" + harness.RandomHex(6),
		sysctls:   map[string]string{},
	}
	for _, name := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + name); err == nil {
			k.sysctls[name] = strings.TrimSpace(string(b))
		}
	}
	_, err := os.Stat(legacyLogDir)
	k.logDirSeen = err == nil
	for _, d := range []string{k.rootDir, k.manifests, k.podLogs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(k.restoreHost)
	return k
}

// config is kubelet's KubeletConfiguration: standalone, cgroupfs, no
// server, healthz on loopback, nothing under the host's /var/lib/kubelet
// or /var/log/pods.
func (k *kubelet) config(socket string, healthzPort int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s
staticPodPath: %s
fileCheckFrequency: 1s
syncFrequency: 10s
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
enableServer: false
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
resolvConf: %s
hairpinMode: none
makeIPTablesUtilChains: false
podLogsDir: %s
volumePluginDir: %s
`, socket, k.manifests, healthzPort, k.writeFile("resolv.conf", "nameserver 127.0.0.1\n"),
		k.podLogs, filepath.Join(k.dir, "volume-plugins"))
}

func (k *kubelet) writeFile(name, content string) string {
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		k.t.Fatal(err)
	}
	return p
}

// start runs kubelet against socket and waits until its healthz answers;
// the cleanup it registers stops it (it runs before the daemon's).
func (k *kubelet) start(socket string) {
	t := k.t
	t.Helper()
	port := freePort(t)
	k.healthz = fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	cfg := k.writeFile("kubelet.yaml", k.config(socket, port))
	logFile, err := os.OpenFile(k.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	args := []string{"--config", cfg, "--root-dir", k.rootDir,
		"--cert-dir", filepath.Join(k.dir, "pki"), "--hostname-override", k.nodeName, "--v", "2"}
	if gates := os.Getenv("BERTH_KUBELET_FEATURE_GATES"); gates != "" {
		args = append(args, "--feature-gates", gates) // e.g. CRIListStreaming=true
	}
	k.cmd = exec.Command(k.bin, args...)
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start kubelet: %v", err)
	}
	k.exited = make(chan struct{})
	go func() { k.cmd.Wait(); close(k.exited) }() //nolint:errcheck // seen via exited
	if !k.stopRegistered {
		t.Cleanup(k.stop)
		k.stopRegistered = true
	}
	t.Logf("kubelet pid %d, log %s", k.cmd.Process.Pid, k.logPath)
	k.waitFor("kubelet healthz", time.Minute, k.healthy)
}

func (k *kubelet) healthy() bool {
	select {
	case <-k.exited:
		k.t.Fatalf("kubelet exited: %v\n%s", k.cmd.ProcessState, k.logTail(60))
	default:
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(k.healthz)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop ends the kubelet this test started and reports on its log.
func (k *kubelet) stop() {
	k.terminate()
	if k.t.Failed() {
		k.t.Logf("kubelet log %s:\n%s", k.logPath, k.logTail(120))
	}
	k.logUnimplemented()
	if keep := os.Getenv("BERTH_KUBELET_LOG"); keep != "" {
		if b, err := os.ReadFile(k.logPath); err == nil {
			_ = os.WriteFile(keep, b, 0o644)
		}
	}
}

// terminate ends the kubelet this test started, by pid: SIGTERM, then
// SIGKILL.
func (k *kubelet) terminate() {
	if k.cmd == nil {
		return
	}
	defer func() { k.cmd = nil }()
	select {
	case <-k.exited:
		k.t.Errorf("kubelet exited on its own: %v", k.cmd.ProcessState)
		return
	default:
	}
	k.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // our own child
	select {
	case <-k.exited:
	case <-time.After(20 * time.Second):
		k.t.Errorf("kubelet did not exit 20s after SIGTERM; killing it")
		k.cmd.Process.Kill() //nolint:errcheck // our own child
		<-k.exited
	}
}

// logUnimplemented reports the kubelet log lines about CRI calls berth
// does not implement (kubelet may speak a newer CRI than berth serves).
func (k *kubelet) logUnimplemented() {
	b, _ := os.ReadFile(k.logPath)
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "Unimplemented") && !strings.Contains(line, "unknown method") &&
			!strings.Contains(line, "not implemented") {
			continue
		}
		key := line
		if i := strings.Index(line, "]"); i >= 0 {
			key = line[i:] // without the time stamp
		}
		if !seen[key] {
			seen[key] = true
			k.t.Logf("kubelet: %s", line)
		}
	}
}

// waitFor polls cond every 200ms until it holds or timeout passes.
func (k *kubelet) waitFor(what string, timeout time.Duration, cond func() bool) {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			k.t.Fatalf("timed out after %v waiting for %s\n%s", timeout, what, k.logTail(60))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (k *kubelet) logTail(n int) string {
	b, _ := os.ReadFile(k.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "--- kubelet log (last lines) ---\n" + strings.Join(lines, "\n")
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
