package svcnft

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// neighbour is a second network namespace, a machine on the host's LAN:
// do runs a function there.
type neighbour struct {
	fd    int
	funcs chan func()
}

// newNeighbour makes the namespace, on a thread of its own that ends with
// stop (the namespace with it).
func newNeighbour(t *testing.T) (*neighbour, func()) {
	t.Helper()
	n := &neighbour{funcs: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		err := unix.Unshare(unix.CLONE_NEWNET)
		if err == nil {
			n.fd, err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
		ready <- err
		if err != nil {
			return
		}
		for fn := range n.funcs {
			fn()
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("the neighbour's namespace: %v", err)
	}
	return n, func() { close(n.funcs); unix.Close(n.fd) }
}

func (n *neighbour) do(fn func()) {
	done := make(chan struct{})
	n.funcs <- func() { defer close(done); fn() }
	<-done
}

// The guard in a real kernel: the host's LAN address lies in the service
// range (10.254.0.0/16 here) and a LAN neighbour still reaches it; the
// neighbour does not reach the ClusterIP (dropped) until its address is
// in the pods set.
func TestGuardKeepsTheHostsOtherAddresses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace and nft")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft binary")
	}
	nb, stop := newNeighbour(t)
	defer stop()
	inNewNetns(t, func() {
		ctx := context.Background()
		clusterIP, hostLAN, nbAddr := netip.MustParseAddr("10.254.254.1"), netip.MustParseAddr("10.254.1.1"), netip.MustParseAddr("10.254.1.2")
		if err := setUpLink(clusterIP); err != nil {
			t.Errorf("the test namespace's links: %v", err)
			return
		}
		if err := setUpLAN(nb, hostLAN, nbAddr, clusterIP); err != nil {
			t.Errorf("the LAN: %v", err)
			return
		}
		svcL, err := net.Listen("tcp4", clusterIP.String()+":0")
		if err != nil {
			t.Error(err)
			return
		}
		defer svcL.Close()
		go serveHello(svcL)
		lanL, err := net.Listen("tcp4", hostLAN.String()+":0") // say, the host's sshd
		if err != nil {
			t.Error(err)
			return
		}
		defer lanL.Close()
		go serveHello(lanL)
		tab, err := New("svcnft-guard", time.Now)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = tab.Remove(ctx) }()
		service := netip.AddrPortFrom(clusterIP, 80)
		st := State{Guarded: []netip.Addr{clusterIP}, Pods: []netip.Addr{netip.MustParseAddr("10.88.0.5")},
			Redirects: []Redirect{{Protocol: "TCP", Service: service, Listener: svcL.Addr().(*net.TCPAddr).AddrPort()}}}
		if err := tab.Sync(ctx, st); err != nil {
			t.Errorf("Sync: %v", err)
			return
		}
		lan := lanL.Addr().(*net.TCPAddr).AddrPort()
		nb.do(func() {
			if got, err := hello(lan); got != "hello" {
				t.Errorf("the neighbour to the host's LAN address %s (in the service range): %q %v; want its hello", lan, got, err)
			}
			if got, err := hello(service); err == nil {
				t.Errorf("the neighbour (no pod) to the ClusterIP: %q; want dropped", got)
			}
		})
		if err := tab.AddPods(ctx, []netip.Addr{nbAddr}); err != nil {
			t.Errorf("AddPods: %v", err)
		}
		nb.do(func() {
			if got, err := hello(service); got != "hello" {
				t.Errorf("a pod's address to the ClusterIP: %q %v; want the listener's hello", got, err)
			}
		})
	})
}

// setUpLAN links the test's namespace (lan0, host) to the neighbour's
// (lan1, nb; its route to the ClusterIP goes through the host).
func setUpLAN(nb *neighbour, host, nbAddr, clusterIP netip.Addr) error {
	err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "lan0"}, PeerName: "lan1", PeerNamespace: netlink.NsFd(nb.fd)})
	if err == nil {
		err = addrUp("lan0", host, 16)
	}
	if err != nil {
		return err
	}
	nb.do(func() {
		err = addrUp("lan1", nbAddr, 16)
		if err == nil {
			err = addrUp("lo", netip.MustParseAddr("127.0.0.1"), 8)
		}
		if err == nil {
			var l netlink.Link
			if l, err = netlink.LinkByName("lan1"); err == nil {
				err = netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index,
					Dst: &net.IPNet{IP: clusterIP.AsSlice(), Mask: net.CIDRMask(32, 32)}, Gw: host.AsSlice()})
			}
		}
	})
	if err != nil {
		return fmt.Errorf("the neighbour's side: %w", err)
	}
	return nil
}

func addrUp(name string, a netip.Addr, bits int) error {
	l, err := netlink.LinkByName(name)
	if err == nil && name != "lo" {
		err = netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, 32)}})
	}
	if err == nil {
		err = netlink.LinkSetUp(l)
	}
	return err
}
