package svcnet

import (
	"fmt"
	"net/netip"
	"os"
	"testing"

	"github.com/vishvananda/netlink"
)

func TestSyncAndRemove(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make links")
	}
	name := fmt.Sprintf("bsvct%d", os.Getpid()%100000)
	t.Cleanup(func() { _ = Remove(name) })
	a1, a2 := netip.MustParseAddr("10.250.0.1"), netip.MustParseAddr("10.250.0.2")
	if err := Sync(name, []netip.Addr{a1, a2}); err != nil {
		t.Fatal(err)
	}
	if got := addrsOf(t, name); len(got) != 2 || !got[a1] || !got[a2] {
		t.Fatalf("addresses %v; want %s and %s", got, a1, a2)
	}
	if err := Sync(name, []netip.Addr{a2}); err != nil {
		t.Fatal(err)
	}
	if got := addrsOf(t, name); len(got) != 1 || !got[a2] {
		t.Fatalf("after removing one: %v; want %s only", got, a2)
	}
	if err := Remove(name); err != nil {
		t.Fatal(err)
	}
	if Exists(name) {
		t.Error("the link is still there")
	}
	if err := Remove(name); err != nil {
		t.Errorf("removing an absent link: %v", err)
	}
}

func addrsOf(t *testing.T, name string) map[netip.Addr]bool {
	t.Helper()
	link, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	list, err := netlink.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	out := map[netip.Addr]bool{}
	for _, a := range list {
		ip, _ := netip.AddrFromSlice(a.IP)
		out[ip.Unmap()] = true
	}
	return out
}

// A link of the name that is not the agent's is neither used nor removed.
func TestForeignLinkLeftAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make links")
	}
	name := fmt.Sprintf("bsvcf%d", os.Getpid()%100000)
	if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	if err := Sync(name, []netip.Addr{netip.MustParseAddr("10.250.0.9")}); err == nil {
		t.Error("Sync used another program's link")
	}
	if err := Remove(name); err == nil {
		t.Error("Remove removed another program's link")
	}
	if _, err := netlink.LinkByName(name); err != nil {
		t.Errorf("the foreign link is gone: %v", err)
	}
}
