package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// floodYAML: a web pod (busybox httpd on 8080) behind a NodePort Service.
func floodYAML(nodePort int) string {
	return `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "mkdir -p /www && echo hello-flood > /www/index.html && exec httpd -f -p 8080 -h /www"]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: web-np}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: ` + fmt.Sprint(nodePort) + `}]
`
}

// floodConns and perService: the test's connections to the NodePort, and
// the agent's per-Service cap it runs with.
const floodConns, perService = 2000, 100

// A NodePort flooded with idle connections: the agent proxies at most
// its per-Service cap of them (two descriptors each) and resets the
// rest; the runtime's CRI and the agent's API keep answering within a
// second; once the connections close, the descriptors are back and the
// Service serves.
func TestServicesUnderAConnectionFlood(t *testing.T) {
	onEachRuntimeWith(t, servicesUnderAConnectionFlood)
}

func servicesUnderAConnectionFlood(t *testing.T, start func(...string) *node) {
	third, nodePort, iface := 202, 30782, "bte2eflood-b"
	if strings.HasSuffix(t.Name(), "/containerd") { // they run side by side
		third, nodePort, iface = 203, 30783, "bte2eflood-c"
	}
	t.Cleanup(func() { checkNoInterface(t, iface) }) // after the node's teardown
	n := start(fmt.Sprintf("--service-cluster-ip-range=10.96.%d.0/24", third), "--service-interface="+iface,
		"--nodeport-address=127.0.0.1", fmt.Sprintf("--service-max-connections-per-service=%d", perService))
	manifest := n.write("flood.yaml", floodYAML(nodePort))
	n.must("apply", "-f", manifest)
	n.waitPod("web", "ready", readyPod)
	hostGet(t, nodePort, "hello-flood")

	pid := n.rt.agentPid()
	before := openFDsOf(t, pid)
	conns := openIdle(t, fmt.Sprintf("127.0.0.1:%d", nodePort), floodConns)
	t.Logf("%d of %d connections made; the agent had %d descriptors", len(conns), floodConns, before)
	closeAll := sync.OnceFunc(func() {
		for _, c := range conns {
			_ = c.SetLinger(0) // a reset: the proxy ends the connection at once
			_ = c.Close()
		}
	})
	defer closeAll()

	for range 3 {
		n.answersWithin(time.Second)
		if fds := openFDsOf(t, pid); fds > before+2*perService+64 {
			t.Errorf("the agent holds %d descriptors under the flood, %d before; want at most %d more", fds, before, 2*perService+64)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if log := n.rt.logTail(400); !strings.Contains(log, "connection limit reached") {
		t.Errorf("no warning of the connection limit in the agent's log:\n%s", log)
	}

	closeAll()
	waitFor(t, "the agent's descriptors back", func() bool { return openFDsOf(t, pid) <= before+16 })
	hostGet(t, nodePort, "hello-flood")
	n.must("delete", "-f", manifest)
	checkNoInterface(t, iface)
}

// openIdle opens up to count TCP connections to addr, 32 at a time, for
// at most a minute, and returns those made (idle: nothing is sent).
func openIdle(t *testing.T, addr string, count int) []*net.TCPConn {
	t.Helper()
	var (
		mu    sync.Mutex
		conns []*net.TCPConn
		wg    sync.WaitGroup
	)
	deadline := time.Now().Add(time.Minute)
	next := make(chan struct{}, count)
	for range count {
		next <- struct{}{}
	}
	close(next)
	for range 32 {
		wg.Go(func() {
			for range next {
				if time.Now().After(deadline) {
					return
				}
				c, err := net.DialTimeout("tcp", addr, 2*time.Second)
				if err != nil {
					continue // reset before the connect was seen done
				}
				mu.Lock()
				conns = append(conns, c.(*net.TCPConn))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return conns
}

// answersWithin checks that the runtime's CRI (Version) and the agent's
// API (the pod list) each answer within d.
func (n *node) answersWithin(d time.Duration) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	if _, err := n.rt.cri().Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		n.t.Errorf("CRI Version under the flood: %v after %s", err, time.Since(start))
	}
	ctx, cancel = context.WithTimeout(context.Background(), d)
	defer cancel()
	start = time.Now()
	if _, err := n.client.ListPods(ctx, "default"); err != nil {
		n.t.Errorf("the agent's pod list under the flood: %v after %s", err, time.Since(start))
	}
}

// openFDsOf counts the open descriptors of process pid.
func openFDsOf(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("the agent's descriptors: %v", err)
	}
	return len(fds)
}
