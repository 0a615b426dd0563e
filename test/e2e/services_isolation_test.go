package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// isolationYAML: a web pod (busybox httpd on 8080, ready once it
// serves), a ClusterIP Service web on port, and a client pod.
func isolationYAML(port int) string {
	return `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: busybox
    imagePullPolicy: IfNotPresent
    ports: [{name: http, containerPort: 8080}]
    command: [sh, -c, "mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www"]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: ` + fmt.Sprint(port) + `, targetPort: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: sh
    image: busybox
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
`
}

// Services take no port from the host and answer only this node: with a
// ClusterIP Service on port P, a host server binds 0.0.0.0:P (TCP and
// UDP; and 0.0.0.0:53, the cluster DNS's port, when the machine leaves it
// free) while the pod and the host still reach the Service on
// ClusterIP:P and its name through the DNS; a network namespace standing
// for a LAN neighbour, routed to the service range through a veth to the
// host, reaches neither ClusterIP:P nor the DNS (TCP or UDP), though it
// reaches a server of the host's.
func TestServicesTakeNoHostPortsAndStayOnTheNode(t *testing.T) {
	onEachRuntimeWith(t, servicesTakeNoHostPorts)
}

func servicesTakeNoHostPorts(t *testing.T, start func(...string) *node) {
	third, iface := 236, "bte2eiso-b"
	if strings.HasSuffix(t.Name(), "/containerd") { // they run side by side
		third, iface = 237, "bte2eiso-c"
	}
	port := freeWildcardPort(t, 18236+third-236)
	dns53Free := wildcardBindable("tcp", 53) && wildcardBindable("udp", 53)
	upstream := upstreamDNS(t)
	t.Cleanup(func() { checkNoInterface(t, iface) })
	n := start(fmt.Sprintf("--service-cluster-ip-range=10.96.%d.0/24", third), "--service-interface="+iface,
		"--cluster-dns-upstream="+upstream, "--nodeport-address=127.0.0.1")
	clusterIP, dnsAddr := fmt.Sprintf("10.96.%d.1", third), fmt.Sprintf("10.96.%d.10", third)
	manifest := n.write("svc.yaml", isolationYAML(port))
	n.must("apply", "-f", manifest)
	n.waitPod("web", "running", running("httpd"))
	n.waitPod("client", "running", running("sh"))
	n.waitExec("client", "sh", "GET ClusterIP:port", func(s string) bool { return strings.Contains(s, "hello-from-web") },
		"sh", "-c", httpGetPort(clusterIP, port))

	// A host server binds the Service's port on every address; the
	// Service keeps serving the pod and the host.
	hostServer, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
	if err != nil {
		t.Fatalf("a host server's bind of 0.0.0.0:%d while a Service uses the port: %v", port, err)
	}
	defer hostServer.Close()
	hostUDP, err := net.ListenPacket("udp4", fmt.Sprintf("0.0.0.0:%d", port))
	if err != nil {
		t.Fatalf("a host server's bind of udp 0.0.0.0:%d: %v", port, err)
	}
	hostUDP.Close()
	if dns53Free {
		for _, network := range []string{"tcp", "udp"} {
			if !wildcardBindable(network, 53) {
				t.Errorf("%s 0.0.0.0:53 was free before the cluster DNS and is not now", network)
			}
		}
	} else {
		t.Log("port 53 is taken on this machine before the node starts: the cluster DNS's bind is not checked")
	}
	if out, err := n.exec("client", "sh", "sh", "-c", httpGetPort(clusterIP, port)); err != nil || !strings.Contains(out, "hello-from-web") {
		t.Errorf("the pod's GET %s:%d with a host server on 0.0.0.0:%d: %q %v", clusterIP, port, port, out, err)
	}
	n.lookup("web", func(s string) bool { return strings.Contains(s, "Address: "+clusterIP+"\n") })
	if body := hostHTTPGet(clusterIP, port); !strings.Contains(body, "hello-from-web") {
		t.Errorf("the host's GET %s:%d: %q; want the pod's page, not the host server", clusterIP, port, body)
	}
	if got := hostLookup(t, dnsAddr, "web.default.svc.cluster.local."); got != clusterIP {
		t.Errorf("the host's DNS query of web: %q; want %s", got, clusterIP)
	}
	hostServer.Close()

	// A LAN neighbour reaches the host, but not the Service or the DNS.
	ns := newNeighbour(t, third, fmt.Sprintf("10.96.%d.0/24", third))
	control, err := net.Listen("tcp4", ns.hostAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer control.Close()
	go func() {
		if c, err := control.Accept(); err == nil {
			c.Close()
		}
	}()
	ns.run(t, func() {
		if c, err := net.DialTimeout("tcp4", control.Addr().String(), 3*time.Second); err != nil {
			t.Errorf("the neighbour cannot reach the host's server %s: %v (the check below would prove nothing)", control.Addr(), err)
		} else {
			c.Close()
		}
		if c, err := net.DialTimeout("tcp4", fmt.Sprintf("%s:%d", clusterIP, port), 2*time.Second); err == nil {
			c.Close()
			t.Errorf("the neighbour reached the Service at %s:%d", clusterIP, port)
		}
		for _, network := range []string{"udp", "tcp"} {
			c := &dns.Client{Net: network, Timeout: 2 * time.Second}
			if m, _, err := c.Exchange(new(dns.Msg).SetQuestion("web.default.svc.cluster.local.", dns.TypeA), dnsAddr+":53"); err == nil {
				t.Errorf("the cluster DNS answered the neighbour over %s: %v", network, m)
			}
		}
	})

	n.must("delete", "-f", manifest)
	waitFor(t, "the service interface and table gone", func() bool {
		_, err := net.InterfaceByName(iface)
		return err != nil && !nftTableThere(iface)
	})
}

// freeWildcardPort returns the first port from first on that TCP and UDP
// 0.0.0.0 binds take now.
func freeWildcardPort(t *testing.T, first int) int {
	t.Helper()
	for p := first; p < first+100; p++ {
		if wildcardBindable("tcp", p) && wildcardBindable("udp", p) {
			return p
		}
	}
	t.Fatalf("no free port from %d", first)
	return 0
}

// wildcardBindable says whether network 0.0.0.0:port can be bound now.
func wildcardBindable(network string, port int) bool {
	addr := fmt.Sprintf("0.0.0.0:%d", port)
	if network == "udp" {
		c, err := net.ListenPacket("udp4", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	l, err := net.Listen("tcp4", addr)
	if err == nil {
		l.Close()
	}
	return err == nil
}

func hostHTTPGet(addr string, port int) string {
	c, err := net.DialTimeout("tcp4", fmt.Sprintf("%s:%d", addr, port), 3*time.Second)
	if err != nil {
		return err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}

func hostLookup(t *testing.T, server, name string) string {
	t.Helper()
	m, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), server+":53")
	if err != nil {
		return err.Error()
	}
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			return a.A.String()
		}
	}
	return m.String()
}

func nftTableThere(name string) bool {
	return exec.Command("nft", "list", "table", "ip", name).Run() == nil
}

// neighbour is a network namespace of the test's own joined to the host
// by a veth pair (169.254.<third>.0/30), with routes to the service range
// through the host: a machine of the LAN that routes to the ClusterIPs.
type neighbour struct {
	name, hostLink, hostAddr string
}

func newNeighbour(t *testing.T, third int, serviceRange string) *neighbour {
	t.Helper()
	nb := &neighbour{name: fmt.Sprintf("bte2eiso-n%d", third), hostLink: fmt.Sprintf("btiso%dh", third),
		hostAddr: fmt.Sprintf("169.254.%d.1", third)}
	nbAddr := fmt.Sprintf("169.254.%d.2", third)
	remove := func() {
		_ = exec.Command("ip", "netns", "del", nb.name).Run() // the test's own; its veth end goes with it
		_ = exec.Command("ip", "link", "del", nb.hostLink).Run()
	}
	remove() // a crashed run's
	t.Cleanup(func() {
		remove()
		if _, err := net.InterfaceByName(nb.hostLink); err == nil {
			t.Errorf("the neighbour's veth %s is still there", nb.hostLink)
		}
	})
	for _, args := range [][]string{
		{"netns", "add", nb.name},
		{"link", "add", nb.hostLink, "type", "veth", "peer", "name", "eth0", "netns", nb.name},
		{"addr", "add", nb.hostAddr + "/30", "dev", nb.hostLink},
		{"link", "set", nb.hostLink, "up"},
		{"-n", nb.name, "link", "set", "lo", "up"},
		{"-n", nb.name, "addr", "add", nbAddr + "/30", "dev", "eth0"},
		{"-n", nb.name, "link", "set", "eth0", "up"},
		{"-n", nb.name, "route", "add", serviceRange, "via", nb.hostAddr},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nb
}

// run runs fn on a thread in the neighbour's namespace: the sockets fn
// makes are the neighbour's. The thread is never given back (it ends with
// its goroutine).
func (nb *neighbour) run(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		goruntime.LockOSThread()
		f, err := os.Open("/run/netns/" + nb.name)
		if err != nil {
			t.Errorf("the neighbour's namespace: %v", err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			t.Errorf("entering the neighbour's namespace: %v", err)
			return
		}
		fn()
	}()
	<-done
}
