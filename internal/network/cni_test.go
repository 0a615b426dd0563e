package network

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-dev/berth/internal/errdefs"
)

// setupPod runs Setup and checks the basics of the result.
func (tn *testNet) setupPod(t *testing.T, a Attachment) net.IP {
	t.Helper()
	res, err := tn.cni.Setup(withTimeout(t, time.Minute), a)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if res.Interface != "eth0" || len(res.IPs) != 1 || !tn.subnet.Contains(res.IPs[0]) {
		t.Fatalf("Setup result = %+v, want one IP in %s on eth0", res, tn.subnet)
	}
	if _, err := os.Stat(tn.allocationFile(res.IPs[0])); err != nil {
		t.Errorf("host-local allocation for %s: %v", res.IPs[0], err)
	}
	return res.IPs[0]
}

func TestSetupTwoPodsPingAndTeardown(t *testing.T) {
	tn := newTestNet(t)
	before := iptablesSave(t)
	a1, _ := tn.newPod(t)
	a2, dir2 := tn.newPod(t)
	ip1 := tn.setupPod(t, a1)
	ip2 := tn.setupPod(t, a2)
	if ip1.Equal(ip2) {
		t.Fatalf("both pods got %s", ip1)
	}
	if n := tn.bridgePorts(t); n != 2 {
		t.Errorf("bridge has %d ports, want 2", n)
	}
	out, err := nsenterNet(withTimeout(t, 20*time.Second), a1.NetnsPath, "/bin/busybox", "ping", "-c", "1", "-W", "3", ip2.String()).CombinedOutput()
	if err != nil {
		t.Errorf("ping %s from pod 1: %v\n%s", ip2, err, out)
	}
	out, err = nsenterNet(withTimeout(t, 20*time.Second), a1.NetnsPath, "/bin/busybox", "ip", "-o", "addr", "show", "lo").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "127.0.0.1") {
		t.Errorf("lo in pod 1 not up with 127.0.0.1: %v %s", err, out)
	}
	during := iptablesSave(t)
	chains1, chains2 := podChains(before, during, a1.PodID), podChains(before, during, a2.PodID)
	if len(podLines(before, during, a1.PodID, chains1)) == 0 {
		t.Fatal("no iptables rules for pod 1 after Setup; the comparison would prove nothing")
	}

	// Pod 1: namespace alive.
	ctx := withTimeout(t, time.Minute)
	for i := 0; i < 2; i++ {
		if err := tn.cni.Teardown(ctx, a1); err != nil {
			t.Fatalf("Teardown pod 1 (call %d): %v", i+1, err)
		}
	}
	if _, err := os.Stat(tn.allocationFile(ip1)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("IP %s still allocated after Teardown: %v", ip1, err)
	}
	if n := tn.bridgePorts(t); n != 1 {
		t.Errorf("bridge has %d ports after one Teardown, want 1", n)
	}
	if left := podLines(before, iptablesSave(t), a1.PodID, chains1); len(left) > 0 {
		t.Errorf("iptables rules of pod 1 left:\n%s", strings.Join(left, "\n"))
	}

	// Pod 2: namespace gone before Teardown.
	if err := Unpin(dir2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := tn.cni.Teardown(ctx, a2); err != nil {
			t.Fatalf("Teardown pod 2 after Unpin (call %d): %v", i+1, err)
		}
	}
	if _, err := os.Stat(tn.allocationFile(ip2)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("IP %s still allocated after Teardown: %v", ip2, err)
	}
	// Pod 2's veth pair goes with its namespace, which the kernel destroys
	// once nothing refers to it any more — a copy of the pin in another
	// process's mount namespace (a container being set up by a test running
	// beside this one) may delay that. Teardown's own job is the address and
	// the host's rules, checked here.
	if left := podLines(before, iptablesSave(t), a2.PodID, chains2); len(left) > 0 {
		t.Errorf("iptables rules of pod 2 left after Teardown without netns:\n%s", strings.Join(left, "\n"))
	}
}

func TestPortMapping(t *testing.T) {
	tn := newTestNet(t)
	before := iptablesSave(t)
	a, _ := tn.newPod(t)
	hostPort := int32(20000 + randomInt(t, 20000))
	a.PortMappings = []PortMapping{
		{HostPort: hostPort, ContainerPort: 8080, Protocol: "tcp"},
		{ContainerPort: 9090, Protocol: "udp"}, // no host port: informational only
	}
	tn.setupPod(t, a)

	ctx := withTimeout(t, 30*time.Second)
	var got bytes.Buffer
	listener := nsenterNet(ctx, a.NetnsPath, "/bin/busybox", "nc", "-l", "-p", "8080")
	listener.Stdout = &got
	if err := listener.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if listener.ProcessState == nil {
			_ = listener.Process.Kill()
			_ = listener.Wait()
		}
	})
	msg := "hello " + randomHex(t, 4) + "\n"
	if err := dialUntilAccepted(ctx, fmt.Sprintf("127.0.0.1:%d", hostPort), msg); err != nil {
		t.Fatal(err)
	}
	if err := listener.Wait(); err != nil {
		t.Fatalf("listener in the pod: %v", err)
	}
	if got.String() != msg {
		t.Errorf("listener in the pod got %q, want %q", got.String(), msg)
	}

	during := iptablesSave(t)
	chains := podChains(before, during, a.PodID)
	if !strings.Contains(strings.Join(podLines(before, during, a.PodID, chains), "\n"), fmt.Sprint(hostPort)) {
		t.Fatal("no DNAT rule for the host port after Setup")
	}
	if err := tn.cni.Teardown(withTimeout(t, time.Minute), a); err != nil {
		t.Fatal(err)
	}
	if left := podLines(before, iptablesSave(t), a.PodID, chains); len(left) > 0 {
		t.Errorf("iptables rules left:\n%s", strings.Join(left, "\n"))
	}
}

// dialUntilAccepted connects to addr and sends msg, retrying while the
// listener is not up yet.
func dialUntilAccepted(ctx context.Context, addr, msg string) error {
	var last error
	for ctx.Err() == nil {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			_, err = conn.Write([]byte(msg))
			conn.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("dial %s: %v", addr, last)
}

func TestSetupFailureRollsBack(t *testing.T) {
	tn := newTestNet(t)
	// A network whose second plugin does not exist: bridge ADD succeeds,
	// then the list fails and Setup must undo the bridge's work.
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","name":%q,"plugins":[
		{"type":"bridge","bridge":%q,"ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q}]]}},
		{"type":"nosuchplugin"}]}`, tn.def.Name, tn.def.Bridge, tn.def.DataDir, tn.subnet)
	writeFile(t, filepath.Join(tn.confDir, "00-broken.conflist"), conf)
	a, _ := tn.newPod(t)
	// Before the cleanup's Teardown, which would otherwise fail on the
	// missing plugin (and report it).
	t.Cleanup(func() { os.Remove(filepath.Join(tn.confDir, "00-broken.conflist")) })
	_, err := tn.cni.Setup(withTimeout(t, time.Minute), a)
	if err == nil || !strings.Contains(err.Error(), "nosuchplugin") {
		t.Fatalf("Setup = %v, want the missing plugin's error", err)
	}
	if n := tn.bridgePorts(t); n != 0 {
		t.Errorf("bridge has %d ports after a failed Setup", n)
	}
	entries, _ := os.ReadDir(filepath.Join(tn.def.DataDir, tn.def.Name))
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			t.Errorf("IP %s still allocated after a failed Setup", e.Name())
		}
	}
	if att, _ := tn.cni.lib.GetCachedAttachments(a.PodID); len(att) != 0 {
		t.Errorf("%d cached attachments after a failed Setup", len(att))
	}
}

func TestSetupRejectsBadInput(t *testing.T) {
	c := NewCNI(CNIConfig{ConfDir: t.TempDir(), BinDirs: []string{pluginDir}, CacheDir: t.TempDir()})
	good := Attachment{PodID: "abc", PodName: "p", PodNamespace: "ns", PodUID: "u", NetnsPath: "/run/x/net"}
	cases := map[string]func(a *Attachment){
		"pod id":     func(a *Attachment) { a.PodID = "" },
		"pod id ":    func(a *Attachment) { a.PodID = "a/b" },
		"pod uid":    func(a *Attachment) { a.PodUID = "" },
		"pod name":   func(a *Attachment) { a.PodName = "" },
		"netns path": func(a *Attachment) { a.NetnsPath = "" },
		"protocol": func(a *Attachment) {
			a.PortMappings = []PortMapping{{HostPort: 80, ContainerPort: 80, Protocol: "icmp"}}
		},
		"container port": func(a *Attachment) { a.PortMappings = []PortMapping{{HostPort: 80, ContainerPort: 0}} },
		"host ip":        func(a *Attachment) { a.PortMappings = []PortMapping{{HostPort: 80, ContainerPort: 80, HostIP: "x"}} },
	}
	for field, mutate := range cases {
		a := good
		mutate(&a)
		_, err := c.Setup(context.Background(), a)
		if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), strings.TrimSpace(field)) {
			t.Errorf("%s: err = %v, want InvalidArgument naming it", field, err)
		}
	}
	if err := c.Teardown(context.Background(), Attachment{}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("Teardown without pod id: %v", err)
	}
	if _, err := c.Setup(context.Background(), good); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("Setup without a network config: %v, want FailedPrecondition", err)
	}
	if err := c.Teardown(context.Background(), good); err != nil {
		t.Errorf("Teardown of a never set up pod without config: %v", err)
	}
}

func BenchmarkSetupTeardown(b *testing.B) {
	tn := newTestNet(b)
	dir := filepath.Join(b.TempDir(), "ns")
	ns, err := Pin(PinOptions{Dir: dir, Net: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = Unpin(dir) })
	a := Attachment{PodID: randomHex(b, 16), PodName: "bench", PodNamespace: "default", PodUID: "u", NetnsPath: ns.Net,
		PortMappings: []PortMapping{{HostPort: int32(20000 + randomInt(b, 20000)), ContainerPort: 80, Protocol: "tcp"}}}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tn.cni.Setup(ctx, a); err != nil {
			b.Fatal(err)
		}
		if err := tn.cni.Teardown(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
