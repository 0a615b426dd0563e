package svcnft

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// inNewNetns runs fn on a thread of its own in a new network namespace
// (the nft runs, links and sockets fn makes are that namespace's; the
// thread ends with its goroutine, the namespace with it).
func inNewNetns(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		fn()
	}()
	<-done
}

// The table in a real kernel (a namespace of the test's own): nft takes
// it; ClusterIP:80 reaches the listener at a port of the kernel's while a
// wildcard bind of port 80 succeeds; another port of the ClusterIP is
// refused; Sync, Exists and Remove work on the real table.
func TestTableInTheKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace and nft")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft binary")
	}
	inNewNetns(t, func() {
		ctx := context.Background()
		clusterIP := netip.MustParseAddr("10.254.254.1")
		if err := setUpLink(clusterIP); err != nil {
			t.Errorf("the test namespace's links: %v", err)
			return
		}
		l, err := net.Listen("tcp4", clusterIP.String()+":0")
		if err != nil {
			t.Error(err)
			return
		}
		defer l.Close()
		go serveHello(l)
		listener := l.Addr().(*net.TCPAddr).AddrPort()
		tab, err := New("svcnft-test", time.Now)
		if err != nil {
			t.Error(err)
			return
		}
		service := netip.AddrPortFrom(clusterIP, 80)
		if err := tab.Sync(ctx, State{Guarded: []netip.Addr{clusterIP}, Redirects: []Redirect{{Protocol: "TCP", Service: service, Listener: listener}},
			Pods: []netip.Addr{netip.MustParseAddr("10.88.0.5")}}); err != nil {
			t.Errorf("Sync: %v", err)
			return
		}
		if err := tab.AddPods(ctx, []netip.Addr{netip.MustParseAddr("10.88.0.6")}); err != nil {
			t.Errorf("AddPods: %v", err)
		}
		wildcard, err := net.Listen("tcp4", "0.0.0.0:80") //nolint:gosec // a host daemon's wildcard bind, in the test's own namespace, is what is checked
		if err != nil {
			t.Errorf("a wildcard bind of the Service's port: %v", err)
		} else {
			defer wildcard.Close()
		}
		if got, err := hello(service); got != "hello" {
			t.Errorf("through %s: %q %v; want the listener's hello", service, got, err)
		}
		if got, err := hello(netip.AddrPortFrom(clusterIP, 81)); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("another port of the ClusterIP: %q %v; want refused", got, err)
		}
		if ok, err := tab.Exists(ctx); !ok || err != nil {
			t.Errorf("Exists: %v %v", ok, err)
		}
		if err := tab.Remove(ctx); err != nil {
			t.Errorf("Remove: %v", err)
		}
		if ok, err := tab.Exists(ctx); ok || err != nil {
			t.Errorf("Exists after Remove: %v %v", ok, err)
		}
		if err := tab.Remove(ctx); err != nil {
			t.Errorf("Remove of an absent table: %v", err)
		}
	})
}

func setUpLink(addr netip.Addr) error {
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err == nil {
		err = netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "svc0"}})
	}
	var link netlink.Link
	if err == nil {
		link, err = netlink.LinkByName("svc0")
	}
	if err == nil {
		err = netlink.AddrAdd(link, &netlink.Addr{IPNet: &net.IPNet{IP: addr.AsSlice(), Mask: net.CIDRMask(32, 32)}})
	}
	if err == nil {
		err = netlink.LinkSetUp(link)
	}
	return err
}

func serveHello(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		_, _ = c.Write([]byte("hello"))
		c.Close()
	}
}

// hello reads what addr says.
func hello(addr netip.AddrPort) (string, error) {
	c, err := net.DialTimeout("tcp4", addr.String(), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	b := make([]byte, 16)
	n, err := c.Read(b)
	return string(b[:n]), err
}
