package svcnft

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
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
	requireRootAndNft(t)
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

// The reverse-path check in a real kernel: a pod behind a bridge (with
// br_netfilter's bridge-nf-call-iptables on in the test's namespace)
// reaches the DNS address; a LAN neighbour sending with that pod's
// address as its source does not (its datagram never reaches the
// listener), though the pod's address is in the pods set.
func TestGuardChecksThePodsPath(t *testing.T) {
	requireRootAndNft(t)
	nb, stopNb := newNeighbour(t)
	defer stopNb()
	pod, stopPod := newNeighbour(t)
	defer stopPod()
	inNewNetns(t, func() {
		ctx := context.Background()
		dnsAddr, podAddr := netip.MustParseAddr("10.254.254.10"), netip.MustParseAddr("10.88.0.5")
		if err := setUpLink(dnsAddr); err != nil {
			t.Errorf("the test namespace's links: %v", err)
			return
		}
		if err := setUpLAN(nb, netip.MustParseAddr("10.254.1.1"), netip.MustParseAddr("10.254.1.2"), dnsAddr); err != nil {
			t.Errorf("the LAN: %v", err)
			return
		}
		if err := setUpBridgedPod(pod, podAddr); err != nil {
			t.Errorf("the bridged pod: %v", err)
			return
		}
		if err := nb.addAddr("lan1", podAddr); err != nil { // the forger
			t.Errorf("the neighbour's forged address: %v", err)
			return
		}
		l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: dnsAddr.AsSlice()})
		if err != nil {
			t.Error(err)
			return
		}
		defer l.Close()
		heard := make(chan string, 16)
		go func() {
			b := make([]byte, 100)
			for {
				n, from, err := l.ReadFromUDPAddrPort(b)
				if err != nil {
					return
				}
				heard <- string(b[:n])
				_, _ = l.WriteToUDPAddrPort(b[:n], from)
			}
		}()
		tab, err := New("svcnft-rp", time.Now)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = tab.Remove(ctx) }()
		service := netip.AddrPortFrom(dnsAddr, 53)
		if err := tab.Sync(ctx, State{Guarded: []netip.Addr{dnsAddr}, Pods: []netip.Addr{podAddr},
			Redirects: []Redirect{{Protocol: "UDP", Service: service, Listener: l.LocalAddr().(*net.UDPAddr).AddrPort()}}}); err != nil {
			t.Errorf("Sync: %v", err)
			return
		}
		nb.do(func() { sendUDP(t, podAddr, service, "forged") })
		pod.do(func() { sendUDP(t, podAddr, service, "pod") })
		select {
		case got := <-heard:
			if got != "pod" {
				t.Errorf("the listener heard %q first; want the pod's datagram only", got)
			}
		case <-time.After(2 * time.Second):
			t.Error("the bridged pod's datagram did not reach the listener")
		}
		select {
		case got := <-heard:
			t.Errorf("the listener heard %q too; want the forged datagram dropped", got)
		case <-time.After(300 * time.Millisecond):
		}
	})
}

// sendUDP sends msg from src (port of the kernel's) to dst.
func sendUDP(t *testing.T, src netip.Addr, dst netip.AddrPort, msg string) {
	c, err := net.DialUDP("udp4", &net.UDPAddr{IP: src.AsSlice()}, net.UDPAddrFromAddrPort(dst))
	if err != nil {
		t.Errorf("from %s: %v", src, err)
		return
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Errorf("sending %q: %v", msg, err)
	}
}

func (n *neighbour) addAddr(link string, a netip.Addr) (err error) {
	n.do(func() {
		var l netlink.Link
		if l, err = netlink.LinkByName(link); err == nil {
			err = netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(32, 32)}})
		}
	})
	return err
}

// setUpBridgedPod puts the pod's namespace behind the bridge pods0
// (10.88.0.1/24) of the test's namespace, a CNI bridge network, with
// bridge-nf-call-iptables on in the test's namespace (br_netfilter's
// setting is per network namespace; the host's is left as it is).
func setUpBridgedPod(pod *neighbour, a netip.Addr) error {
	if err := os.WriteFile("/proc/sys/net/bridge/bridge-nf-call-iptables", []byte("1"), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("bridge-nf-call-iptables: %w", err)
	}
	err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "pods0"}})
	if err == nil {
		err = addrUp("pods0", netip.MustParseAddr("10.88.0.1"), 24)
	}
	if err == nil {
		err = netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "pv0"}, PeerName: "eth0", PeerNamespace: netlink.NsFd(pod.fd)})
	}
	var port, br netlink.Link
	if err == nil {
		port, err = netlink.LinkByName("pv0")
	}
	if err == nil {
		br, err = netlink.LinkByName("pods0")
	}
	if err == nil {
		err = netlink.LinkSetMaster(port, br)
	}
	if err == nil {
		err = netlink.LinkSetUp(port)
	}
	if err != nil {
		return err
	}
	pod.do(func() {
		err = addrUp("eth0", a, 24)
		if err == nil {
			err = addrUp("lo", netip.MustParseAddr("127.0.0.1"), 8)
		}
		if err == nil {
			var l netlink.Link
			if l, err = netlink.LinkByName("eth0"); err == nil {
				err = netlink.RouteAdd(&netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.IPv4(10, 88, 0, 1)})
			}
		}
	})
	return err
}
