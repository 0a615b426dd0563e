package kube

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/harness"
)

// Kubelet is one kubelet process with its own directories.
type Kubelet struct {
	T         *testing.T
	NodeName  string
	Dir       string // config, resolv.conf, volume plugins, certificates
	RootDir   string // --root-dir
	Manifests string // staticPodPath
	PodLogs   string // podLogsDir
	// Port is kubelet's server on 127.0.0.1 (0: standalone, no server).
	Port int
	// FeatureGates is passed to --feature-gates by the next Start, with
	// those of BERTH_KUBELET_FEATURE_GATES.
	FeatureGates []string

	opts       KubeletOptions
	proc       *Process
	healthz    string            // http://127.0.0.1:<port>/healthz
	sysctls    map[string]string // kernel settings before kubelet touched them
	logDirSeen bool              // /var/log/containers existed before the test
	stopOnce   bool
}

// KubeletOptions configure a Kubelet.
type KubeletOptions struct {
	Bin string
	// ControlPlane registers the kubelet as node "localhost" with this API
	// server and turns on its server on 127.0.0.1; nil runs it standalone
	// under a random node name.
	ControlPlane *ControlPlane
	// Config is appended to the KubeletConfiguration (YAML lines).
	Config string
	// CgroupDriver is kubelet's cgroupDriver: "cgroupfs" (the default) or
	// "systemd". kubelet 1.34+ takes the driver the runtime reports in
	// RuntimeConfig over this one.
	CgroupDriver string
	// Wrap runs kubelet through a command: Wrap..., kubelet, args
	// (harness.PrivateSystemd.Enter, for the systemd driver). It must exit
	// with kubelet's status and pass SIGTERM on to it.
	Wrap []string
}

// kubeletSysctls are the kernel settings kubelet sets (setupKernelTunables);
// the test restores them.
var kubeletSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
	"kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// legacyLogDir is where kubelet links container logs, whatever its flags.
const legacyLogDir = "/var/log/containers"

// NewKubelet prepares a kubelet and registers the host cleanup, which runs
// after the daemon's when the daemon starts later. It refuses to run where
// a kubepods cgroup already exists: that belongs to another kubelet.
func NewKubelet(t *testing.T, opts KubeletOptions) *Kubelet {
	t.Helper()
	if left := kubepodsCgroups(); len(left) > 0 {
		t.Fatalf("kubepods cgroups exist before the test (another kubelet, or a crashed run): %v", left)
	}
	dir := t.TempDir()
	k := &Kubelet{
		T: t, Dir: dir, opts: opts,
		RootDir:   filepath.Join(dir, "root"),
		Manifests: filepath.Join(dir, "manifests"),
		PodLogs:   filepath.Join(dir, "pods"),
		NodeName:  "berth-kubelet-" + harness.RandomHex(6),
		sysctls:   map[string]string{},
	}
	if opts.ControlPlane != nil {
		k.NodeName, k.Port = "localhost", FreePort(t)
	}
	for _, name := range kubeletSysctls {
		if b, err := os.ReadFile("/proc/sys/" + name); err == nil {
			k.sysctls[name] = strings.TrimSpace(string(b))
		}
	}
	_, err := os.Stat(legacyLogDir)
	k.logDirSeen = err == nil
	for _, d := range []string{k.RootDir, k.Manifests, k.PodLogs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(k.restoreHost)
	harness.KeepOnFailure(t, filepath.Join(dir, "kubelet.log"), filepath.Join(dir, "goroutines.log"))
	return k
}

// config is kubelet's KubeletConfiguration: its cgroup driver, healthz on loopback,
// nothing under the host's /var/lib/kubelet or /var/log/pods; standalone
// without a server, registered with its server on 127.0.0.1.
func (k *Kubelet) config(socket string, healthzPort int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://%s
staticPodPath: %s
fileCheckFrequency: 1s
syncFrequency: 10s
cgroupDriver: %s
failCgroupV1: false
failSwapOn: false
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
resolvConf: %s
hairpinMode: none
makeIPTablesUtilChains: false
podLogsDir: %s
volumePluginDir: %s
%s%s`, socket, k.Manifests, k.cgroupDriver(), healthzPort, k.WriteFile("resolv.conf", "nameserver 127.0.0.1\n"),
		k.PodLogs, filepath.Join(k.Dir, "volume-plugins"), k.serverConfig(), k.opts.Config)
}

func (k *Kubelet) cgroupDriver() string {
	if k.opts.CgroupDriver == "" {
		return "cgroupfs"
	}
	return k.opts.CgroupDriver
}

// serverConfig turns kubelet's server off (standalone) or serves it on
// 127.0.0.1 with a certificate of the cluster's CA, authenticating client
// certificates and API server tokens, authorizing through the API server.
func (k *Kubelet) serverConfig() string {
	cp := k.opts.ControlPlane
	if cp == nil {
		return `enableServer: false
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
`
	}
	cert, key := must2(k.T)(cp.CA.Server("kubelet-serving-"+k.NodeName, k.NodeName, "127.0.0.1"))
	return fmt.Sprintf(`enableServer: true
address: 127.0.0.1
port: %d
tlsCertFile: %s
tlsPrivateKeyFile: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
`, k.Port, cert, key, cp.CA.CertPath)
}

// WriteFile writes a file into the kubelet's directory.
func (k *Kubelet) WriteFile(name, content string) string {
	p := filepath.Join(k.Dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		k.T.Fatal(err)
	}
	return p
}

// WriteManifest places a static pod manifest atomically.
func (k *Kubelet) WriteManifest(name, content string) {
	tmp := k.WriteFile(name, content)
	if err := os.Rename(tmp, filepath.Join(k.Manifests, name)); err != nil {
		k.T.Fatal(err)
	}
}

// Start runs kubelet against socket and waits until its healthz answers;
// the cleanup it registers stops it (it runs before the daemon's).
func (k *Kubelet) Start(socket string) {
	t := k.T
	t.Helper()
	port := FreePort(t)
	k.healthz = fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	args := []string{"--config", k.WriteFile("kubelet.yaml", k.config(socket, port)), "--root-dir", k.RootDir,
		"--cert-dir", filepath.Join(k.Dir, "pki"), "--hostname-override", k.NodeName, "--v", "2"}
	if cp := k.opts.ControlPlane; cp != nil {
		args = append(args, "--kubeconfig", cp.NodeKubeconfig(k.NodeName))
	}
	gates := k.FeatureGates
	if env := os.Getenv("BERTH_KUBELET_FEATURE_GATES"); env != "" {
		gates = append(gates, env) // e.g. CRIListStreaming=true
	}
	if len(gates) > 0 {
		args = append(args, "--feature-gates", strings.Join(gates, ","))
	}
	argv := append(append(append([]string(nil), k.opts.Wrap...), k.opts.Bin), args...)
	k.proc = &Process{Name: "kubelet", Bin: argv[0], Args: argv[1:], LogPath: filepath.Join(k.Dir, "kubelet.log")}
	if err := k.proc.Start(); err != nil {
		t.Fatal(err)
	}
	if !k.stopOnce {
		t.Cleanup(k.stop)
		k.stopOnce = true
	}
	t.Logf("kubelet pid %d, log %s", k.proc.Pid(), k.proc.LogPath)
	k.WaitFor("kubelet healthz", time.Minute, k.healthy)
}

func (k *Kubelet) healthy() bool {
	if k.proc.Exited() {
		k.T.Fatalf("kubelet exited: %v\n%s", k.proc.ExitStatus(), k.proc.LogTail(60))
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
func (k *Kubelet) stop() {
	k.Terminate()
	if k.T.Failed() {
		k.T.Log(k.proc.LogTail(120))
	}
	k.logUnimplemented()
	if keep := os.Getenv("BERTH_KUBELET_LOG"); keep != "" {
		if b, err := os.ReadFile(k.proc.LogPath); err == nil {
			_ = os.WriteFile(keep, b, 0o644)
		}
	}
}

// Terminate ends the kubelet by pid: SIGTERM, then SIGKILL.
func (k *Kubelet) Terminate() {
	if err := k.proc.Stop(20 * time.Second); err != nil {
		k.T.Error(err)
	}
}

// LogLines lists the lines of kubelet's log (every start) that contain s.
func (k *Kubelet) LogLines(s string) []string {
	b, _ := os.ReadFile(k.proc.LogPath)
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// logUnimplemented reports the kubelet log lines about CRI calls berth
// does not implement (kubelet may speak a newer CRI than berth serves).
func (k *Kubelet) logUnimplemented() {
	b, _ := os.ReadFile(k.proc.LogPath)
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
			k.T.Logf("kubelet: %s", line)
		}
	}
}

// WaitFor polls cond every 200ms until it holds or timeout passes; on
// timeout it fails the test, and stop then logs the end of kubelet's log.
func (k *Kubelet) WaitFor(what string, timeout time.Duration, cond func() bool) {
	k.T.Helper()
	WaitFor(k.T, what, timeout, cond) // a failed test gets the end of kubelet's log from stop
}

// Died says how kubelet ended when it exited on its own, with its log from
// the last panic or fatal error on (else its last lines); "" while it runs
// or after the test stopped it.
func (k *Kubelet) Died() string {
	if k.proc == nil || !k.proc.Exited() {
		return ""
	}
	b, _ := os.ReadFile(k.proc.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	from := max(len(lines)-5, 0)
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "panic: ") || strings.HasPrefix(lines[i], "fatal error: ") {
			from = i
			break
		}
	}
	end := min(from+8, len(lines))
	return fmt.Sprintf("kubelet exited: %s; its log: %s", k.proc.ExitStatus(), strings.Join(lines[from:end], " | "))
}
