package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/clusterdns"
	"github.com/berth-dev/berth/test/harness"
)

// servicesYAML: two web pods (busybox httpd on 8080, named http, ready
// while /tmp/ready exists) with hostname/subdomain; a ClusterIP Service
// web (80 → http), a headless web-hl and a NodePort web-np; a client pod.
func servicesYAML(nodePort int) string {
	webPod := func(name string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, labels: {app: web}}
spec:
  hostname: ` + name + `
  subdomain: web-hl
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: busybox
    imagePullPolicy: IfNotPresent
    ports: [{name: http, containerPort: 8080}]
    command: [sh, -c, "mkdir -p /www && echo hello-from-$(hostname) > /www/index.html && touch /tmp/ready && exec httpd -f -p 8080 -h /www"]
    readinessProbe:
      exec: {command: [test, -f, /tmp/ready]}
      periodSeconds: 1
      failureThreshold: 1
---
`
	}
	return webPod("web-a") + webPod("web-b") + `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: web-hl}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-np}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080, nodePort: ` + fmt.Sprint(nodePort) + `}]
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

// Services from a pod and from the host: web, web.default and
// web.default.svc.cluster.local reach the pods' 8080 through port 80 of
// the ClusterIP; the headless Service's name is the ready pods'
// addresses, a pod's hostname.subdomain its own; a name outside the zone
// is forwarded upstream; the NodePort answers on 127.0.0.1; a pod that
// stops being ready leaves the DNS answer and the proxies; with the last
// Service the interface goes.
func TestServicesDNSAndNodePort(t *testing.T) {
	onEachRuntimeWith(t, servicesDNSAndNodePort)
}

func servicesDNSAndNodePort(t *testing.T, start func(...string) *node) {
	third, nodePort, iface := 200, 30780, "bte2esvc-b"
	if strings.HasSuffix(t.Name(), "/containerd") { // they run side by side
		third, nodePort, iface = 201, 30781, "bte2esvc-c"
	}
	upstream := upstreamDNS(t)
	t.Cleanup(func() { checkNoInterface(t, iface) }) // after the node's teardown
	n := start("--service-cluster-ip-range=10.96."+fmt.Sprint(third)+".0/24", "--service-interface="+iface,
		"--cluster-dns-upstream="+upstream, "--nodeport-address=127.0.0.1")
	prefix := fmt.Sprintf("10.96.%d.", third)
	clusterIP := prefix + "1"

	manifest := n.write("svc.yaml", servicesYAML(nodePort))
	if out := n.must("apply", "-f", manifest); !strings.Contains(out, "service/web created") {
		t.Fatalf("apply: %q", out)
	}
	for _, p := range []string{"web-a", "web-b"} {
		n.waitPod(p, "ready", readyPod)
	}
	n.waitPod("client", "running", running("sh"))
	ipA, ipB := n.pod("web-a").Status.PodIP, n.pod("web-b").Status.PodIP

	out := n.must("get", "svc", "-o", "wide")
	for _, want := range []string{
		`(?m)^NAME +TYPE +CLUSTER-IP +EXTERNAL-IP +PORT\(S\) +AGE +SELECTOR$`,
		`(?m)^web +ClusterIP +` + regexp.QuoteMeta(prefix) + `1 +<none> +80/TCP +\S+ +app=web$`,
		`(?m)^web-hl +ClusterIP +None +<none> +8080/TCP `,
		`(?m)^web-np +NodePort +` + regexp.QuoteMeta(prefix) + `2 +<none> +80:` + fmt.Sprint(nodePort) + `/TCP `,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("get svc -o wide: no line %s in\n%s", want, out)
		}
	}
	resolv, _ := n.exec("client", "sh", "cat", "/etc/resolv.conf")
	if !strings.Contains(resolv, "nameserver "+prefix+"10") || !strings.Contains(resolv, "search default.svc.cluster.local svc.cluster.local cluster.local") {
		t.Errorf("client's resolv.conf:\n%s", resolv)
	}

	// busybox-static's glibc resolver cannot run in the image (its wget
	// segfaults there, even for an address): names are resolved in the
	// pod with busybox's nslookup, which has its own resolver and applies
	// resolv.conf's search list to names without a dot only, and port 80
	// is reached with nc. web.default is resolved as a libc resolver
	// would with the pod's resolv.conf (ndots:5: the search list first),
	// from the host, against the same server.
	for _, name := range []string{"web", "web.default.svc.cluster.local"} {
		out := n.lookup(name, func(s string) bool {
			return strings.Contains(s, "Name:\tweb.default.svc.cluster.local\nAddress: "+clusterIP+"\n")
		})
		if strings.Contains(out, "Address: "+ipA) || strings.Contains(out, "Address: "+ipB) {
			t.Errorf("nslookup %s answers with the endpoints, not the ClusterIP:\n%s", name, out)
		}
	}
	for _, name := range []string{"web", "web.default", "web.default.svc.cluster.local"} {
		if got := resolveWith(t, resolv, name); got != clusterIP {
			t.Errorf("%s with the pod's resolv.conf: %q; want %s", name, got, clusterIP)
		}
	}
	n.waitExec("client", "sh", "GET "+clusterIP+":80", func(s string) bool { return strings.Contains(s, "hello-from-web-") },
		"sh", "-c", httpGet(clusterIP))
	n.lookup("web-hl.default.svc.cluster.local", func(s string) bool {
		return strings.Contains(s, "Address: "+ipA+"\n") && strings.Contains(s, "Address: "+ipB+"\n")
	})
	if out := n.lookup("web-a.web-hl.default.svc.cluster.local", func(s string) bool { return strings.Contains(s, "Address: "+ipA+"\n") }); strings.Contains(out, ipB) {
		t.Errorf("hostname record web-a.web-hl: %q; want %s only", out, ipA)
	}
	n.lookup("up.ns.svc.example.test.", func(s string) bool { return strings.Contains(s, "Address: 192.0.2.1\n") })
	hostGet(t, nodePort, "hello-from-web-")

	// kill -9 of the agent: the next one adopts the interface and serves
	// the same addresses again.
	n.restartAgent()
	n.lookup("web", func(s string) bool { return strings.Contains(s, "Address: "+clusterIP+"\n") })
	hostGet(t, nodePort, "hello-from-web-")

	// web-b stops being ready: it leaves the headless answer, the
	// ClusterIP's and the NodePort's proxies, and describe's Endpoints.
	if _, err := n.exec("web-b", "httpd", "rm", "/tmp/ready"); err != nil {
		t.Fatal(err)
	}
	n.waitPod("web-b", "not ready", func(p v1.Pod) bool { return !readyPod(p) })
	n.lookup("web-hl.default.svc.cluster.local", func(s string) bool {
		return strings.Contains(s, "Address: "+ipA+"\n") && !strings.Contains(s, ipB)
	})
	waitFor(t, "describe svc web without web-b", func() bool {
		out := n.must("describe", "svc", "web")
		return strings.Contains(out, "Endpoints:") && strings.Contains(out, ipA+":8080") && !strings.Contains(out, ipB)
	})
	for range 6 {
		if out, err := n.exec("client", "sh", "sh", "-c", httpGet(clusterIP)); err != nil || !strings.Contains(out, "hello-from-web-a") {
			t.Fatalf("GET %s:80 with web-b not ready: %q %v", clusterIP, out, err)
		}
		hostGet(t, nodePort, "hello-from-web-a")
	}

	if out := n.must("delete", "-f", manifest); !strings.Contains(out, `service "web" deleted`) {
		t.Errorf("delete -f: %q", out)
	}
	if out, errOut, err := n.berth("get", "svc"); err != nil || out != "" || !strings.Contains(errOut, "No resources found") {
		t.Errorf("get svc after delete: %q %q %v", out, errOut, err)
	}
	checkNoInterface(t, iface)
}

// lookup runs busybox's nslookup in the client pod until its output
// satisfies ok (it exits 1 when any search domain tried is NXDOMAIN, so
// its status says nothing).
func (n *node) lookup(name string, ok func(string) bool) string {
	n.t.Helper()
	var out string
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ = n.exec("client", "sh", "nslookup", name)
		if ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("nslookup %s in the client pod: last output\n%s", name, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// resolveWith resolves name as a libc resolver does with resolv.conf:
// the names of its search list and ndots in order, the first address
// answered.
func resolveWith(t *testing.T, resolv, name string) string {
	t.Helper()
	cfg, err := dns.ClientConfigFromReader(strings.NewReader(resolv))
	if err != nil || len(cfg.Servers) == 0 {
		t.Fatalf("the pod's resolv.conf: %v\n%s", err, resolv)
	}
	for _, fqdn := range cfg.NameList(name) {
		m, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(new(dns.Msg).SetQuestion(fqdn, dns.TypeA), net.JoinHostPort(cfg.Servers[0], "53"))
		if err != nil {
			t.Fatalf("%s: %v", fqdn, err)
		}
		for _, rr := range m.Answer {
			if a, ok := rr.(*dns.A); ok {
				return a.A.String()
			}
		}
	}
	return ""
}

// httpGet is a shell command GETting / on addr port 80 with nc.
func httpGet(addr string) string {
	return `printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 ` + addr + ` 80`
}

// upstreamDNS serves example.test (up.ns.svc.example.test → 192.0.2.1)
// on loopback, UDP and TCP on one port, for the test's life.
func upstreamDNS(t *testing.T) string {
	t.Helper()
	s := clusterdns.NewServer("example.test", nil, slog.New(slog.DiscardHandler))
	s.Update(clusterdns.NewTable("example.test", []clusterdns.Service{{Namespace: "ns", Name: "up",
		Endpoints: []clusterdns.Endpoint{{Addr: netip.MustParseAddr("192.0.2.1")}}}}, nil))
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		ctx, cancel := context.WithCancel(context.Background())
		ready, done := make(chan struct{}), make(chan error, 1)
		go func() { done <- s.ListenAndServe(ctx, addr, func(net.Addr, net.Addr) { close(ready) }) }()
		select {
		case <-ready:
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("upstream DNS server: %v", err)
				}
			})
			return addr
		case err := <-done: // the port was taken meanwhile
			t.Logf("upstream DNS on %s: %v; another port", addr, err)
			cancel()
		}
	}
	t.Fatal("no loopback port for the upstream DNS server")
	return ""
}

// hostGet GETs the NodePort on 127.0.0.1 until the body contains want,
// and returns it.
func hostGet(t *testing.T, port int, want string) string {
	t.Helper()
	var body string
	waitFor(t, fmt.Sprintf("GET 127.0.0.1:%d from the host", port), func() bool {
		c := &http.Client{Timeout: 3 * time.Second}
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, want)
	})
	return body
}

// checkNoInterface checks that the service interface name and the
// Services' nftables table named after it are gone (removing them, the
// test's own, when not).
func checkNoInterface(t *testing.T, name string) {
	t.Helper()
	if _, err := net.InterfaceByName(name); err == nil {
		t.Errorf("the service interface %s is still there", name)
		_ = exec.Command("ip", "link", "del", name).Run() // the test's own
	}
	if harness.NftTableExists("ip", name) {
		t.Errorf("the Services' nftables table ip %s is still there", name)
		_ = harness.RemoveNftTable("ip", name) // the test's own
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
