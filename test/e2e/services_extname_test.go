package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// extNameYAML: two web pods (busybox httpd on 8080, ready while
// /tmp/ready exists); a Service sticky with ClientIP session affinity
// over them; ExternalName Services ext (→ sticky's name, in the cluster
// zone) and ext-up (→ a name only the upstream server knows); a client
// pod.
func extNameYAML() string {
	webPod := func(name string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, labels: {app: sticky}}
spec:
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
metadata: {name: sticky}
spec:
  selector: {app: sticky}
  sessionAffinity: ClientIP
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  type: ExternalName
  externalName: sticky.default.svc.cluster.local
  ports: [{port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: ext-up}
spec:
  type: ExternalName
  externalName: up.ns.svc.example.test.
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

// An ExternalName Service's name is a CNAME to its externalName, with the
// target's addresses (another Service's from the cluster zone, another
// name's from upstream): a pod resolves ext and connects through it; it
// has no ClusterIP, endpoints or EndpointSlices. ClientIP session
// affinity keeps the client pod on one of two endpoints across
// connections, until that endpoint stops being ready. Re-applying ext as
// a ClusterIP Service gives it a ClusterIP, and back to ExternalName
// releases it.
func TestServicesExternalNameAndAffinity(t *testing.T) {
	onEachRuntimeWith(t, servicesExternalNameAndAffinity)
}

func servicesExternalNameAndAffinity(t *testing.T, start func(...string) *node) {
	third, iface := 203, "bte2eext-b"
	if strings.HasSuffix(t.Name(), "/containerd") { // they run side by side
		third, iface = 204, "bte2eext-c"
	}
	upstream := upstreamDNS(t)
	t.Cleanup(func() { checkNoInterface(t, iface) }) // after the node's teardown
	n := start("--service-cluster-ip-range=10.96."+fmt.Sprint(third)+".0/24", "--service-interface="+iface,
		"--cluster-dns-upstream="+upstream, "--nodeport-address=127.0.0.1")
	clusterIP := fmt.Sprintf("10.96.%d.1", third)

	manifest := n.write("ext.yaml", extNameYAML())
	if out := n.must("apply", "-f", manifest); !strings.Contains(out, "service/ext created") {
		t.Fatalf("apply: %q", out)
	}
	for _, p := range []string{"web-a", "web-b"} {
		n.waitPod(p, "ready", readyPod)
	}
	n.waitPod("client", "running", running("sh"))

	out := n.must("get", "svc")
	for _, want := range []string{
		`(?m)^ext +ExternalName +<none> +sticky\.default\.svc\.cluster\.local +80/TCP `,
		`(?m)^ext-up +ExternalName +<none> +up\.ns\.svc\.example\.test\. +<none> `,
		`(?m)^sticky +ClusterIP +` + regexp.QuoteMeta(clusterIP) + ` +<none> +80/TCP `,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("get svc: no line %s in\n%s", want, out)
		}
	}
	if out := n.must("describe", "svc", "ext"); !regexp.MustCompile(`(?m)^External Name: +sticky\.default\.svc\.cluster\.local$`).MatchString(out) ||
		regexp.MustCompile(`(?m)^IP:`).MatchString(out) {
		t.Errorf("describe svc ext: want External Name and no IP:\n%s", out)
	}
	if out, _, _ := n.berth("get", "endpointslices"); strings.Contains(out, "ext") {
		t.Errorf("EndpointSlices of an ExternalName Service:\n%s", out)
	}

	// The pod's resolver: ext is a CNAME to sticky's name, answered with
	// sticky's ClusterIP; ext-up's target comes from upstream.
	resolved := n.lookup("ext", func(s string) bool {
		return strings.Contains(s, "canonical name = sticky.default.svc.cluster.local") && strings.Contains(s, "Address: "+clusterIP+"\n")
	})
	t.Logf("nslookup ext in the client pod:\n%s", resolved)
	resolv, _ := n.exec("client", "sh", "cat", "/etc/resolv.conf")
	for name, want := range map[string]string{"ext": clusterIP, "ext.default": clusterIP, "ext-up": "192.0.2.1"} {
		if got := resolveWith(t, resolv, name); got != want {
			t.Errorf("%s with the pod's resolv.conf: %q; want %s", name, got, want)
		}
	}
	// Connect through the name: the address the pod resolved ext to.
	n.waitExec("client", "sh", "GET ext:80", func(s string) bool { return strings.Contains(s, "hello-from-web-") },
		"sh", "-c", `a=$(nslookup ext | sed -n 's/^Address: //p' | tail -n 1) && `+httpGetPort(`"$a"`, 80))

	checkClientIPAffinity(t, n, clusterIP)
	reapplyType(t, n, clusterIP)

	if out := n.must("delete", "-f", manifest); !strings.Contains(out, `service "ext" deleted`) {
		t.Errorf("delete -f: %q", out)
	}
	checkNoInterface(t, iface)
}

// checkClientIPAffinity: every connection of the client pod to sticky goes to one
// endpoint; when it stops being ready, to the other, and stays there.
func checkClientIPAffinity(t *testing.T, n *node, clusterIP string) {
	t.Helper()
	get := func() string {
		out, err := n.exec("client", "sh", "sh", "-c", httpGetPort(clusterIP, 80))
		if err != nil {
			t.Fatalf("GET %s:80: %q %v", clusterIP, out, err)
		}
		for _, p := range []string{"web-a", "web-b"} {
			if strings.Contains(out, "hello-from-"+p) {
				return p
			}
		}
		t.Fatalf("GET %s:80: no pod's answer in %q", clusterIP, out)
		return ""
	}
	first := get()
	for range 5 {
		if got := get(); got != first {
			t.Fatalf("ClientIP affinity: a connection went to %s after %s", got, first)
		}
	}
	other := map[string]string{"web-a": "web-b", "web-b": "web-a"}[first]
	if _, err := n.exec(first, "httpd", "rm", "/tmp/ready"); err != nil {
		t.Fatal(err)
	}
	n.waitPod(first, "not ready", func(p v1.Pod) bool { return !readyPod(p) })
	waitFor(t, "connections to go to "+other, func() bool { return get() == other })
	if _, err := n.exec(first, "httpd", "touch", "/tmp/ready"); err != nil {
		t.Fatal(err)
	}
	n.waitPod(first, "ready again", readyPod)
	for range 4 {
		if got := get(); got != other {
			t.Fatalf("ClientIP affinity: after %s was ready again a connection went to %s, not %s", first, got, other)
		}
	}
}

// reapplyType turns ext into a ClusterIP Service (it gets the next free
// address) and back (the address is released: get svc shows <none>).
func reapplyType(t *testing.T, n *node, clusterIP string) {
	t.Helper()
	next := strings.TrimSuffix(clusterIP, "1") + "2"
	asClusterIP := n.write("ext-cip.yaml", `apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  selector: {app: sticky}
  ports: [{port: 80, targetPort: 8080}]
`)
	if out := n.must("apply", "-f", asClusterIP); !strings.Contains(out, "service/ext configured") {
		t.Fatalf("apply ext as ClusterIP: %q", out)
	}
	if out := n.must("get", "svc", "ext"); !regexp.MustCompile(`(?m)^ext +ClusterIP +` + regexp.QuoteMeta(next) + ` +<none> +80/TCP `).MatchString(out) {
		t.Errorf("ext as ClusterIP: want %s in\n%s", next, out)
	}
	asExternal := n.write("ext-again.yaml", `apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  type: ExternalName
  externalName: sticky.default.svc.cluster.local
`)
	if out := n.must("apply", "-f", asExternal); !strings.Contains(out, "service/ext configured") {
		t.Fatalf("apply ext as ExternalName again: %q", out)
	}
	if out := n.must("get", "svc", "ext"); !regexp.MustCompile(`(?m)^ext +ExternalName +<none> +sticky`).MatchString(out) {
		t.Errorf("ext as ExternalName again:\n%s", out)
	}
	n.lookup("ext", func(s string) bool { return strings.Contains(s, "Address: "+clusterIP+"\n") })
}

// httpGetPort is a shell command GETting / on addr:port with nc.
func httpGetPort(addr string, port int) string {
	return fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s %d`, addr, port)
}
