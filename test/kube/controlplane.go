package kube

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-dev/berth/test/harness"
	"github.com/berth-dev/berth/test/testpki"
)

// ControlPlane is etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler on 127.0.0.1, with a CA of their own.
type ControlPlane struct {
	Dir    string
	CA     *testpki.CA
	Server string // https://127.0.0.1:<port>
	// AdminKubeconfig authenticates as a member of system:masters.
	AdminKubeconfig string

	t         *testing.T
	processes []*Process // in start order
	adminCert tls.Certificate
}

// ServiceCIDR is the cluster's service range; no kube-proxy serves it.
const ServiceCIDR = "10.0.0.0/24"

// StartControlPlane starts etcd (etcdBin) and the three control plane
// components from binDir, waits until the API server is ready and
// registers a cleanup that stops them in reverse order.
func StartControlPlane(t *testing.T, binDir, etcdBin string) *ControlPlane {
	t.Helper()
	dir := t.TempDir()
	ca, err := testpki.NewCA(dir, "berth-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	cp := &ControlPlane{Dir: dir, CA: ca, t: t}
	harness.KeepOnFailure(t, dir) // before stop: it then runs after it
	t.Cleanup(cp.stop)
	etcdURL := cp.startEtcd(etcdBin)
	port := FreePort(t)
	cp.Server = fmt.Sprintf("https://127.0.0.1:%d", port)
	cp.AdminKubeconfig = cp.kubeconfig("admin", Identity{User: "berth-test-admin", Groups: []string{"system:masters"}})
	cp.startAPIServer(filepath.Join(binDir, "kube-apiserver"), etcdURL, port)
	cp.waitReady()
	cp.startControllers(binDir)
	return cp
}

func (cp *ControlPlane) startEtcd(bin string) string {
	client, peer := FreePort(cp.t), FreePort(cp.t)
	url := fmt.Sprintf("http://127.0.0.1:%d", client)
	cp.run(&Process{Name: "etcd", Bin: bin, Args: []string{
		"--name", "berth-test", "--data-dir", filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("berth-test=http://127.0.0.1:%d", peer),
		"--listen-metrics-urls", fmt.Sprintf("http://127.0.0.1:%d", FreePort(cp.t)),
		"--log-level", "warn",
	}})
	return url
}

// startAPIServer runs kube-apiserver on 127.0.0.1. A loopback advertise
// address needs --endpoint-reconciler-type=none; kubelets are reached by
// their Hostname address, which is "localhost" for the test's node.
func (cp *ControlPlane) startAPIServer(bin, etcdURL string, port int) {
	t, ca := cp.t, cp.CA
	serving, servingKey := must2(t)(ca.Server("apiserver", "127.0.0.1", "localhost", "kubernetes",
		"kubernetes.default", "kubernetes.default.svc", "10.0.0.1"))
	saPub, saKey := must2(t)(ca.KeyPair("sa"))
	kubeletClient, kubeletClientKey := must2(t)(ca.Client("apiserver-kubelet-client",
		"kube-apiserver-kubelet-client", "system:masters"))
	cp.run(&Process{Name: "kube-apiserver", Bin: bin, Args: []string{
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(cp.Dir, "apiserver-certs"),
		"--tls-cert-file", serving, "--tls-private-key-file", servingKey,
		"--client-ca-file", ca.CertPath,
		"--service-cluster-ip-range", ServiceCIDR,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true",
		"--kubelet-client-certificate", kubeletClient, "--kubelet-client-key", kubeletClientKey,
		"--kubelet-certificate-authority", ca.CertPath,
		"--kubelet-preferred-address-types", "Hostname",
		"--profiling=false", "--v", "1",
	}})
}

// startControllers runs kube-controller-manager and kube-scheduler without
// serving ports and without leader election.
func (cp *ControlPlane) startControllers(binDir string) {
	saKey := filepath.Join(cp.CA.Dir, "sa.key") // ServiceAccountKey wrote it
	cp.run(&Process{Name: "kube-controller-manager", Bin: filepath.Join(binDir, "kube-controller-manager"), Args: []string{
		"--kubeconfig", cp.kubeconfig("controller-manager", Identity{User: "system:kube-controller-manager"}),
		"--service-account-private-key-file", saKey, "--root-ca-file", cp.CA.CertPath,
		"--use-service-account-credentials=true",
		"--cluster-signing-cert-file", cp.CA.CertPath, "--cluster-signing-key-file", cp.CA.KeyPath,
		"--service-cluster-ip-range", ServiceCIDR,
		"--leader-elect=false", "--secure-port=0", "--profiling=false", "--v", "1",
	}})
	cp.run(&Process{Name: "kube-scheduler", Bin: filepath.Join(binDir, "kube-scheduler"), Args: []string{
		"--kubeconfig", cp.kubeconfig("scheduler", Identity{User: "system:kube-scheduler"}),
		"--leader-elect=false", "--secure-port=0", "--profiling=false", "--v", "1",
	}})
}

// kubeconfig issues a client certificate for id and writes a kubeconfig
// named <name>.kubeconfig that uses it.
func (cp *ControlPlane) kubeconfig(name string, id Identity) string {
	cert, key := must2(cp.t)(cp.CA.Client(name, id.User, id.Groups...))
	path := filepath.Join(cp.Dir, name+".kubeconfig")
	if err := WriteKubeconfig(path, cp.Server, cp.CA.CertPath, cert, key); err != nil {
		cp.t.Fatal(err)
	}
	if name == "admin" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			cp.t.Fatal(err)
		}
		cp.adminCert = pair
	}
	return path
}

// NodeKubeconfig is a kubeconfig for the kubelet of node.
func (cp *ControlPlane) NodeKubeconfig(node string) string {
	return cp.kubeconfig("kubelet-"+node, Identity{User: "system:node:" + node, Groups: []string{"system:nodes"}})
}

func (cp *ControlPlane) run(p *Process) {
	p.LogPath = filepath.Join(cp.Dir, p.Name+".log")
	if err := p.Start(); err != nil {
		cp.t.Fatal(err)
	}
	cp.processes = append(cp.processes, p)
	cp.t.Logf("%s pid %d, log %s", p.Name, p.Pid(), p.LogPath)
}

// AdminClient is an HTTPS client that trusts the cluster's CA and
// authenticates as the cluster's admin: for the API server, and for
// kubelet's server as metrics-server reaches it, directly.
func (cp *ControlPlane) AdminClient() *http.Client {
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(cp.CA.CertPath)
	if err != nil {
		cp.t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cp.adminCert}}}}
}

// waitReady polls the API server's /readyz as admin.
func (cp *ControlPlane) waitReady() {
	client := cp.AdminClient()
	WaitFor(cp.t, "kube-apiserver /readyz", 2*time.Minute, func() bool {
		cp.CheckRunning()
		resp, err := client.Get(cp.Server + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// CheckRunning fails the test when a component exited.
func (cp *ControlPlane) CheckRunning() {
	if down := cp.Down(); down != "" {
		cp.t.Fatal(down)
	}
}

// Down says which component exited, with the end of its log; "" while
// all run.
func (cp *ControlPlane) Down() string {
	for _, p := range cp.processes {
		if p.Exited() {
			return fmt.Sprintf("%s exited: %s\n%s", p.Name, p.ExitStatus(), p.LogTail(40))
		}
	}
	return ""
}

// stop ends the components in reverse order; a failed test shows the end
// of each log.
func (cp *ControlPlane) stop() {
	for i := len(cp.processes) - 1; i >= 0; i-- {
		p := cp.processes[i]
		if err := p.Stop(20 * time.Second); err != nil {
			cp.t.Errorf("%v", err)
		}
		if cp.t.Failed() {
			cp.t.Log(p.LogTail(30))
		}
	}
}

// must2 fails the test on err and returns the two values.
func must2(t *testing.T) func(a, b string, err error) (string, string) {
	return func(a, b string, err error) (string, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}

// WaitFor polls cond every 200ms until it holds or timeout passes.
func WaitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			harness.Summarize("%s: timed out after %v waiting for %s", t.Name(), timeout, what)
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// FreePort is a TCP port free on 127.0.0.1 now.
func FreePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
