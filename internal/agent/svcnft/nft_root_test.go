package svcnft

import (
	"context"
	"errors"
	"log/slog"
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
	requireRootAndNft(t)
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

// A UDP client sending from one source port keeps reaching its Service
// after the listener moved (a new agent, a new port): Sync deletes the
// conntrack entry that still sends it to the old listener's port.
func TestSyncMovesUDPClientsToTheNewListener(t *testing.T) {
	requireRootAndNft(t)
	inNewNetns(t, func() {
		ctx := context.Background()
		clusterIP := netip.MustParseAddr("10.254.254.10")
		if err := setUpLink(clusterIP); err != nil {
			t.Errorf("the test namespace's links: %v", err)
			return
		}
		tab, err := New("svcnft-ct", time.Now)
		if err != nil {
			t.Error(err)
			return
		}
		tab.SetConntrack(KernelConntrack{}, slog.Default())
		service := netip.AddrPortFrom(clusterIP, 53)
		serve := func(name string) (*net.UDPConn, error) {
			l, err := net.ListenUDP("udp4", &net.UDPAddr{IP: clusterIP.AsSlice()})
			if err != nil {
				return nil, err
			}
			if err := tab.Sync(ctx, State{Guarded: []netip.Addr{clusterIP},
				Redirects: []Redirect{{Protocol: "UDP", Service: service, Listener: l.LocalAddr().(*net.UDPAddr).AddrPort()}}}); err != nil {
				l.Close()
				return nil, err
			}
			go func() {
				b := make([]byte, 100)
				for {
					n, from, err := l.ReadFromUDPAddrPort(b)
					if err != nil {
						return
					}
					_, _ = l.WriteToUDPAddrPort([]byte(name+":"+string(b[:n])), from)
				}
			}()
			return l, nil
		}
		first, err := serve("first")
		if err != nil {
			t.Errorf("the first listener: %v", err)
			return
		}
		client, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40555}, net.UDPAddrFromAddrPort(service))
		if err != nil {
			t.Error(err)
			return
		}
		defer client.Close()
		if got := askUDP(client, "a"); got != "first:a" {
			t.Errorf("through %s: %q; want the first listener's", service, got)
		}
		first.Close()
		second, err := serve("second")
		if err != nil {
			t.Errorf("the second listener: %v", err)
			return
		}
		defer second.Close()
		if got := askUDP(client, "b"); got != "second:b" {
			t.Errorf("the same client after the listener moved: %q; want the second listener's", got)
		}
		if err := tab.Remove(ctx); err != nil {
			t.Errorf("Remove: %v", err)
		}
	})
}

// askUDP sends msg on c and returns the answer, asking again a few times
// (a refused datagram, ICMP, is an error of the next read); "" for none.
func askUDP(c *net.UDPConn, msg string) string {
	b := make([]byte, 100)
	for range 3 {
		if _, err := c.Write([]byte(msg)); err != nil {
			continue
		}
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if n, err := c.Read(b); err == nil {
			return string(b[:n])
		}
	}
	return ""
}

// LeftOvers finds a Services table of another name in the kernel, and
// neither the agent's own nor another program's table.
func TestLeftOversInTheKernel(t *testing.T) {
	requireRootAndNft(t)
	inNewNetns(t, func() {
		ctx := context.Background()
		for _, name := range []string{"old-svc0", "own-svc0"} {
			tab, err := New(name, time.Now)
			if err == nil {
				err = tab.Sync(ctx, State{Guarded: []netip.Addr{netip.MustParseAddr("10.254.254.1")}})
			}
			if err != nil {
				t.Errorf("table %s: %v", name, err)
				return
			}
		}
		other := exec.Command("nft", "add table ip other; add set ip other pods { type ipv4_addr ; }; add chain ip other guard")
		if out, err := other.CombinedOutput(); err != nil {
			t.Errorf("another program's table: %v: %s", err, out)
			return
		}
		got, err := LeftOvers(ctx, "own-svc0")
		if err != nil || len(got) != 1 || got[0] != "old-svc0" {
			t.Errorf("LeftOvers: %v %v; want old-svc0 only", got, err)
		}
	})
}

// requireRootAndNft skips a test that needs a network namespace of its
// own and the nft binary.
func requireRootAndNft(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace and nft")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft binary")
	}
}
