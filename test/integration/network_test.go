package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodsReachEachOther runs a web server in one pod and fetches from it in
// another, over the bridge.
func TestPodsReachEachOther(t *testing.T) {
	d := startDaemon(t)
	serverCfg := podConfig(t, "server")
	serverID := d.runPod(serverCfg)
	serverIP := d.sandboxStatus(serverID).GetNetwork().GetIp()
	if !d.Net.Subnet.Contains(parseIP(serverIP)) {
		t.Fatalf("server pod IP %q, want one in %v", serverIP, d.Net.Subnet)
	}
	d.run(serverID, serverCfg, containerConfig("httpd", "busybox", "httpd", "-f", "-p", "8080", "-h", "/etc"))

	clientCfg := podConfig(t, "client")
	clientID := d.runPod(clientCfg)
	clientIP := d.sandboxStatus(clientID).GetNetwork().GetIp()
	if clientIP == serverIP || !d.Net.Subnet.Contains(parseIP(clientIP)) {
		t.Fatalf("client pod IP %q (server %q), want another one in %v", clientIP, serverIP, d.Net.Subnet)
	}
	fetch := shell("wget", fmt.Sprintf(
		"for i in 1 2 3 4 5 6 7 8 9 10; do wget -qO- http://%s:8080/passwd && exit 0; sleep 0.5; done; exit 1", serverIP))
	id := d.run(clientID, clientCfg, fetch)
	st := d.waitExited(id, 20*time.Second)
	recs := readLog(t, logPath(clientCfg, fetch))
	if st.GetExitCode() != 0 {
		t.Fatalf("wget from pod %s to pod %s: exit code %d\n%+v", clientIP, serverIP, st.GetExitCode(), recs)
	}
	found := false
	for _, r := range recs {
		found = found || strings.HasPrefix(r.Content, "root:")
	}
	if !found {
		t.Errorf("wget output lacks the served /etc/passwd: %+v", recs)
	}
}

// TestCNIFailureRollback runs a pod on a network whose plugin does not
// exist: the pod fails and every step already done is undone.
func TestCNIFailureRollback(t *testing.T) {
	d := startDaemon(t, withPluginType("nonexistent"))

	// api.proto: "NetworkReady means the runtime network is up and ready to
	// accept containers which require network."
	resp, err := d.RT.Status(d.ctx(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	var netCond *runtimeapi.RuntimeCondition
	for _, c := range resp.GetStatus().GetConditions() {
		if c.GetType() == runtimeapi.NetworkReady {
			netCond = c
		}
	}
	if netCond == nil || netCond.GetStatus() {
		t.Errorf("Status NetworkReady condition %v, want false", netCond)
	} else if !strings.Contains(netCond.GetReason()+" "+netCond.GetMessage(), "nonexistent") {
		t.Errorf("NetworkReady reason %q message %q do not name the missing plugin", netCond.GetReason(), netCond.GetMessage())
	}

	cfg := podConfig(t, "nonet")
	_, err = d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err == nil {
		t.Fatalf("RunPodSandbox on a network whose plugin is missing succeeded")
	}
	t.Logf("RunPodSandbox: %v", err)
	if !strings.Contains(err.Error(), "nonexistent") {
		t.Errorf("RunPodSandbox error %q does not name the missing plugin", err)
	}
	if m := d.MountsLeft(); len(m) != 0 {
		t.Errorf("mounts (namespace pins) after the failed RunPodSandbox: %v", m)
	}
	if p := d.dirEntries(filepath.Join(d.State, "pods")); len(p) != 0 {
		t.Errorf("pod dirs after the failed RunPodSandbox: %v", p)
	}
	if r := d.dirEntries(filepath.Join(d.Root, "sandboxes")); len(r) != 0 {
		t.Errorf("sandbox records after the failed RunPodSandbox: %v", r)
	}
	if m := d.monitorProcesses(); len(m) != 0 {
		t.Errorf("monitor processes after the failed RunPodSandbox: %v", m)
	}
	list, err := d.RT.ListPodSandbox(d.ctx(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.GetItems()) != 0 {
		t.Errorf("ListPodSandbox after the failed RunPodSandbox: %v %v, want empty", list.GetItems(), err)
	}
	// The name was released: the same pod may be retried (and fails again the same way).
	_, err = d.RT.RunPodSandbox(d.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "nonexistent") {
		t.Errorf("retried RunPodSandbox: %v, want the same network error (not a name conflict)", err)
	}
}

func (d *daemon) dirEntries(dir string) []string { return dirNames(dir) }

// TestHostNetworkPod runs a pod in the node's network namespace.
func TestHostNetworkPod(t *testing.T) {
	d := startDaemon(t)
	cfg := podConfig(t, "hostnet")
	cfg.Hostname = "" // kubelet sets no hostname for host network pods
	// api.proto NamespaceMode NODE: "A NODE namespace is the namespace of the
	// Kubernetes node."
	cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}
	podID := d.runPod(cfg)
	sb := d.sandboxStatus(podID)
	if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("host network sandbox state %v, want READY", sb.GetState())
	}
	if ip := sb.GetNetwork().GetIp(); ip != "" && d.Net.Subnet.Contains(parseIP(ip)) {
		t.Errorf("host network sandbox got CNI IP %q", ip)
	}
	if a := d.Net.Allocations(); len(a) != 0 {
		t.Errorf("host network sandbox allocated IPs: %v", a)
	}
	ctr := shell("hostname", "hostname")
	ctr.Linux = &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: cfg.Linux.SecurityContext.NamespaceOptions,
	}}
	id := d.run(podID, cfg, ctr)
	if st := d.waitExited(id, 10*time.Second); st.GetExitCode() != 0 {
		t.Fatalf("hostname container exit code %d", st.GetExitCode())
	}
	host, _ := os.Hostname()
	recs := readLog(t, logPath(cfg, ctr))
	if len(recs) == 0 || recs[0].Content != host {
		t.Errorf("container in a host network pod sees hostname %+v, want the host's %q", recs, host)
	}
}
