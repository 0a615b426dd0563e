package svcnft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/knftables"
)

var testGuarded = []netip.Addr{
	netip.MustParseAddr("10.96.0.10"), netip.MustParseAddr("10.96.0.1"), netip.MustParseAddr("10.96.0.10"), // twice: once
	netip.MustParseAddr("fd00::10"), // IPv6: left out
}

func TestFillWholeTable(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "berth-svc0")
	tx := fake.NewTransaction()
	Fill(tx, State{
		Guarded: testGuarded,
		Redirects: []Redirect{
			{Protocol: "TCP", Service: netip.MustParseAddrPort("10.96.0.1:80"), Listener: netip.MustParseAddrPort("10.96.0.1:41234")},
			{Protocol: "UDP", Service: netip.MustParseAddrPort("10.96.0.10:53"), Listener: netip.MustParseAddrPort("10.96.0.10:50000")},
			{Protocol: "SCTP", Service: netip.MustParseAddrPort("10.96.0.1:81"), Listener: netip.MustParseAddrPort("10.96.0.1:41235")},
		},
		Pods: []netip.Addr{netip.MustParseAddr("10.88.0.5"), netip.MustParseAddr("::ffff:10.88.0.6"), netip.MustParseAddr("fd00::5")},
	})
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	dump := fake.Dump()
	for _, want := range []string{
		"add set ip berth-svc0 guarded { type ipv4_addr ; comment \"the ClusterIPs and the cluster DNS address (the service link's)\" ; }",
		"add element ip berth-svc0 guarded { 10.96.0.1 }",
		"add element ip berth-svc0 guarded { 10.96.0.10 }",
		"add element ip berth-svc0 pods { 10.88.0.5 }",
		"add element ip berth-svc0 pods { 10.88.0.6 }",
		"add element ip berth-svc0 redirects { 10.96.0.1 . tcp . 80 : 10.96.0.1 . 41234 }",
		"add element ip berth-svc0 redirects { 10.96.0.10 . udp . 53 : 10.96.0.10 . 50000 }",
		"add chain ip berth-svc0 guard { type filter hook prerouting priority -110 ; }",
		"add rule ip berth-svc0 guard ip daddr @guarded fib daddr type local jump from-node",
		`add rule ip berth-svc0 from-node iif "lo" accept`,
		"add rule ip berth-svc0 from-node ip saddr @pods fib saddr . iif oif exists accept",
		"add rule ip berth-svc0 from-node counter drop",
		"add chain ip berth-svc0 redirect-pods { type nat hook prerouting priority -100 ; }",
		"add chain ip berth-svc0 redirect-host { type nat hook output priority -100 ; }",
		"add rule ip berth-svc0 redirect-host dnat ip to ip daddr . meta l4proto . th dport map @redirects",
		"add rule ip berth-svc0 redirected-only ct status dnat accept",
	} {
		if !strings.Contains(dump, want+"\n") {
			t.Errorf("no line %q in\n%s", want, dump)
		}
	}
	// Only the service link's addresses are guarded: a host address in
	// the service range (10.100.0.1 of 10.96.0.0/12) stays reachable.
	for _, not := range []string{"/12", "/32", "interval", "fd00", "sctp", "41235"} {
		if strings.Contains(dump, not) {
			t.Errorf("%q in the table:\n%s", not, dump)
		}
	}
}

// Sync replaces the table whole (a pod or redirect gone is gone), does not
// run an unchanged one again within Resync, and does after it.
func TestSyncReplacesWhole(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "berth-svc0")
	now := time.Unix(1000, 0)
	tab := NewWith(fake, "berth-svc0", func() time.Time { return now })
	ctx := context.Background()
	pod := func(s string) []netip.Addr { return []netip.Addr{netip.MustParseAddr(s)} }
	if err := tab.Sync(ctx, State{Pods: pod("10.88.0.5")}); err != nil {
		t.Fatal(err)
	}
	if err := tab.AddPods(ctx, pod("10.88.0.7")); err != nil {
		t.Fatal(err)
	}
	if d := fake.Dump(); !strings.Contains(d, "10.88.0.5") || !strings.Contains(d, "10.88.0.7") {
		t.Errorf("after AddPods:\n%s", d)
	}
	if err := tab.Sync(ctx, State{Pods: pod("10.88.0.5")}); err != nil {
		t.Fatal(err)
	}
	if d := fake.Dump(); strings.Contains(d, "10.88.0.7") {
		t.Errorf("a pod gone stays in the set:\n%s", d)
	}
	// Another program flushes the set: an unchanged Sync within Resync
	// leaves it, one after Resync writes it again.
	tx := fake.NewTransaction()
	tx.Flush(&knftables.Set{Name: setPods})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tab.Sync(ctx, State{Pods: pod("10.88.0.5")}); err != nil {
		t.Fatal(err)
	}
	if d := fake.Dump(); strings.Contains(d, "10.88.0.5") {
		t.Errorf("an unchanged table was applied again within Resync:\n%s", d)
	}
	// The same pods and redirects in another order, an address twice:
	// the same table, not applied again either.
	two := []netip.Addr{netip.MustParseAddr("10.88.0.8"), netip.MustParseAddr("10.88.0.5")}
	r1 := Redirect{Protocol: "TCP", Service: netip.MustParseAddrPort("10.96.0.1:80"), Listener: netip.MustParseAddrPort("10.96.0.1:40000")}
	r2 := Redirect{Protocol: "UDP", Service: netip.MustParseAddrPort("10.96.0.1:80"), Listener: netip.MustParseAddrPort("10.96.0.1:40001")}
	if err := tab.Sync(ctx, State{Pods: two, Redirects: []Redirect{r1, r2}}); err != nil {
		t.Fatal(err)
	}
	tx = fake.NewTransaction()
	tx.Flush(&knftables.Set{Name: setPods})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tab.Sync(ctx, State{Pods: append([]netip.Addr{two[1]}, two...), Redirects: []Redirect{r2, r1}}); err != nil {
		t.Fatal(err)
	}
	if d := fake.Dump(); strings.Contains(d, "10.88.0.8") {
		t.Errorf("the same state in another order was applied again:\n%s", d)
	}
	if err := tab.Sync(ctx, State{Pods: pod("10.88.0.5")}); err != nil {
		t.Fatal(err)
	}
	tx = fake.NewTransaction()
	tx.Flush(&knftables.Set{Name: setPods})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	now = now.Add(Resync)
	if err := tab.Sync(ctx, State{Pods: pod("10.88.0.5")}); err != nil {
		t.Fatal(err)
	}
	if d := fake.Dump(); !strings.Contains(d, "10.88.0.5") {
		t.Errorf("not applied again after Resync:\n%s", d)
	}
	if ok, err := tab.Exists(ctx); !ok || err != nil {
		t.Errorf("Exists: %v %v", ok, err)
	}
	for range 2 { // absent: not an error
		if err := tab.Remove(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := tab.Exists(ctx); ok || err != nil {
		t.Errorf("Exists after Remove: %v %v", ok, err)
	}
}

// A table another program deleted (nft flush ruleset) comes back at the
// first unchanged Sync Recheck after the last look, not only after
// Resync.
func TestSyncRestoresADeletedTableWithinRecheck(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "berth-svc0")
	now := time.Unix(1000, 0)
	tab := NewWith(fake, "berth-svc0", func() time.Time { return now })
	ctx := context.Background()
	st := State{Guarded: []netip.Addr{netip.MustParseAddr("10.96.0.1")}, Pods: []netip.Addr{netip.MustParseAddr("10.88.0.5")}}
	if err := tab.Sync(ctx, st); err != nil {
		t.Fatal(err)
	}
	tx := fake.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	now = now.Add(Recheck / 2)
	if err := tab.Sync(ctx, st); err != nil {
		t.Fatal(err)
	}
	if ok, _ := tab.Exists(ctx); ok {
		t.Fatal("looked again before Recheck") // one listing per Recheck, not per Sync
	}
	now = now.Add(Recheck / 2)
	if err := tab.Sync(ctx, st); err != nil {
		t.Fatal(err)
	}
	if d := fake.Dump(); !strings.Contains(d, "add element ip berth-svc0 pods { 10.88.0.5 }") || !strings.Contains(d, "add chain ip berth-svc0 guard") {
		t.Errorf("the deleted table is not back after Recheck:\n%s", d)
	}
}

// fakeConntrack records the cleanings asked for; fail makes them fail.
type fakeConntrack struct {
	asked []string
	fail  bool
}

func (f *fakeConntrack) DeleteStaleUDP(service netip.AddrPort, listener uint16) (uint, error) {
	f.asked = append(f.asked, fmt.Sprintf("%s->%d", service, listener))
	if f.fail {
		return 0, errors.New("netlink: operation not permitted")
	}
	return 1, nil
}

// Sync cleans the conntrack entries of each UDP redirect once per
// listener: all at the first Sync (a previous agent's listeners are
// gone), then those whose listener moved, or that came back; a failure
// is tried again at the next Sync, even an unchanged one; TCP is left.
func TestSyncDeletesStaleUDPConntrack(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "berth-svc0")
	tab := NewWith(fake, "berth-svc0", time.Now)
	ct := &fakeConntrack{}
	tab.SetConntrack(ct, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	dns, web := netip.MustParseAddrPort("10.96.0.10:53"), netip.MustParseAddrPort("10.96.0.1:5353")
	red := func(proto string, svc netip.AddrPort, port uint16) Redirect {
		return Redirect{Protocol: proto, Service: svc, Listener: netip.AddrPortFrom(svc.Addr(), port)}
	}
	step := func(want string, rs ...Redirect) {
		t.Helper()
		ct.asked = nil
		if err := tab.Sync(ctx, State{Redirects: rs}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ct.asked, " "); got != want {
			t.Errorf("cleaned %q; want %q", got, want)
		}
	}
	step("10.96.0.10:53->40000 10.96.0.1:5353->40001", red("UDP", dns, 40000), red("TCP", dns, 40002), red("UDP", web, 40001))
	step("", red("UDP", dns, 40000), red("TCP", dns, 40002), red("UDP", web, 40001))
	step("10.96.0.10:53->41000", red("UDP", dns, 41000), red("TCP", dns, 40003), red("UDP", web, 40001))
	step("", red("UDP", dns, 41000))
	step("10.96.0.1:5353->40001", red("UDP", dns, 41000), red("UDP", web, 40001)) // web came back
	ct.fail = true
	step("10.96.0.10:53->42000", red("UDP", dns, 42000), red("UDP", web, 40001))
	ct.fail = false
	step("10.96.0.10:53->42000", red("UDP", dns, 42000), red("UDP", web, 40001))
	step("", red("UDP", dns, 42000), red("UDP", web, 40001))
}

// A Services table is recognised by its objects, exactly: the one Fill
// writes is; one with an object more or less, or another table's, is not.
func TestIsServicesTable(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "old-svc0")
	tx := fake.NewTransaction()
	Fill(tx, State{Guarded: testGuarded})
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	objs, err := fake.ListAll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !IsServicesTable(objs) {
		t.Errorf("Fill's table not recognised: %v", objs)
	}
	more := map[string][]string{"table": {"x"}, "set": {"pods", "guarded"}, "map": {"redirects"}, "chain": append(slices.Clone(objs["chain"]), "mine")}
	less := map[string][]string{"set": {"pods", "guarded"}, "chain": objs["chain"]}
	other := map[string][]string{"set": {"pods"}, "chain": {"input"}}
	extraType := map[string][]string{"set": {"pods", "guarded"}, "map": {"redirects"}, "chain": objs["chain"], "flowtable": {"f"}}
	for name, o := range map[string]map[string][]string{"a chain more": more, "no map": less, "another table": other, "a flowtable": extraType, "empty": {}} {
		if IsServicesTable(o) {
			t.Errorf("%s: recognised as a Services table: %v", name, o)
		}
	}
	names, err := tableNames([]byte(`{"nftables": [{"metainfo": {"version": "1.0.6"}}, {"table": {"family": "ip", "name": "x", "handle": 1}}, {"table": {"family": "ip", "name": "berth-svc0", "handle": 2}}]}`))
	if err != nil || !slices.Equal(names, []string{"x", "berth-svc0"}) {
		t.Errorf("tableNames: %v %v", names, err)
	}
}
