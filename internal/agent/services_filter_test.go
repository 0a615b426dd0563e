package agent

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/berth-dev/berth/internal/agent/svcnft"
)

// A sandbox's addresses enter the table's pods as soon as the worker made
// it, stay while its worker lives though no status shows them yet, and go
// with the worker; the DNS server's client check follows the same set.
func TestServicePodsFollowSandboxesAndWorkers(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "test-svc")
	table := svcnft.NewWith(fake, "test-svc", time.Now)
	pods := newServicePods()
	pods.workersRecovered() // an agent past its start
	ctx := context.Background()
	inSet := func(ip string) bool {
		return strings.Contains(fake.Dump(), "add element ip test-svc pods { "+ip+" }\n")
	}

	// Before the first Service: recorded, nothing to program.
	if err := pods.sandboxStarted(ctx, "uid-a", []string{"10.88.0.5"}); err != nil {
		t.Fatal(err)
	}
	if err := pods.sync(table, svcnft.State{Pods: []netip.Addr{netip.MustParseAddr("10.88.0.9")}}, map[string]bool{"uid-a": true}); err != nil {
		t.Fatal(err)
	}
	if !inSet("10.88.0.5") || !inSet("10.88.0.9") {
		t.Fatalf("after the first sync:\n%s", fake.Dump())
	}
	// A sandbox made between two syncs is in the set at once.
	if err := pods.sandboxStarted(ctx, "uid-b", []string{"10.88.0.6", "not-an-ip"}); err != nil {
		t.Fatal(err)
	}
	if !inSet("10.88.0.6") || !pods.isPod(netip.MustParseAddr("10.88.0.6")) {
		t.Errorf("a new sandbox's address is not let in:\n%s", fake.Dump())
	}
	// Its worker gone, its address goes at the next sync.
	if err := pods.sync(table, svcnft.State{}, map[string]bool{"uid-a": true}); err != nil {
		t.Fatal(err)
	}
	if inSet("10.88.0.6") || pods.isPod(netip.MustParseAddr("10.88.0.6")) || !inSet("10.88.0.5") {
		t.Errorf("after uid-b's worker went:\n%s", fake.Dump())
	}

	allowed := pods.clientAllowed
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "10.88.0.5": true, "::ffff:10.88.0.5": true,
		"10.88.0.6": false, "192.0.2.1": false, "10.96.0.10": false, // not a local address here
	} {
		if got := allowed(netip.MustParseAddr(addr)); got != want {
			t.Errorf("DNS client %s allowed: %v; want %v", addr, got, want)
		}
	}
	var nilPods *servicePods
	if err := nilPods.sandboxStarted(ctx, "uid-c", []string{"10.88.0.7"}); err != nil {
		t.Errorf("without Services: %v", err)
	}
}

// An agent that starts keeps the pods set its predecessor left in the
// kernel until its workers are recovered (its first Services sync runs
// before them): the running pods keep reaching the ClusterIPs and the
// DNS; afterwards the set is the workers' pods.
func TestServicePodsKeepTheKernelsSetUntilWorkersRecover(t *testing.T) {
	fake := knftables.NewFake(knftables.IPv4Family, "test-svc")
	ctx := context.Background()
	before := svcnft.NewWith(fake, "test-svc", time.Now) // the previous agent's
	if err := before.Sync(ctx, svcnft.State{Pods: []netip.Addr{netip.MustParseAddr("10.88.0.5")}}); err != nil {
		t.Fatal(err)
	}
	inSet := func(ip string) bool {
		return strings.Contains(fake.Dump(), "add element ip test-svc pods { "+ip+" }\n")
	}
	pods := newServicePods()
	table := svcnft.NewWith(fake, "test-svc", time.Now)
	if err := pods.sync(table, svcnft.State{}, nil); err != nil {
		t.Fatal(err)
	}
	if !inSet("10.88.0.5") || !pods.isPod(netip.MustParseAddr("10.88.0.5")) {
		t.Errorf("the first sync, before the workers, dropped the running pod:\n%s", fake.Dump())
	}
	pods.workersRecovered()
	if err := pods.sync(table, svcnft.State{Pods: []netip.Addr{netip.MustParseAddr("10.88.0.6")}}, nil); err != nil {
		t.Fatal(err)
	}
	if inSet("10.88.0.5") || !inSet("10.88.0.6") {
		t.Errorf("after the workers recovered, the set is not theirs:\n%s", fake.Dump())
	}
	var none *servicePods
	none.workersRecovered() // no Services: nothing to do
}

// A failed making of the Services' table (no nft) is not tried again
// before its back-off: 30 s, doubling up to 5 min; the same error is
// returned meanwhile; a success ends the back-off.
func TestServiceTableRetryBacksOff(t *testing.T) {
	var r tableRetry
	tries := 0
	fail := errors.New(`could not find nftables binary: exec: "nft": executable file not found in $PATH`)
	makeTable := func() (*svcnft.Table, error) { tries++; return nil, fail }
	now := time.Unix(1000, 0)
	_, first := r.table(now, makeTable)
	if !errors.Is(first, fail) || !strings.Contains(first.Error(), "nft binary, version 1.0.1 or later") {
		t.Fatalf("first failure: %v", first)
	}
	for _, step := range []struct {
		after time.Duration
		tries int
	}{
		{time.Second, 1}, {29 * time.Second, 2}, // 30 s after the first
		{59 * time.Second, 2}, {time.Second, 3}, // then 60 s
		{2 * time.Minute, 4}, {4 * time.Minute, 5}, {5 * time.Minute, 6}, {5 * time.Minute, 7}, // 120 s, 240 s, then 5 min at most
	} {
		now = now.Add(step.after)
		_, err := r.table(now, makeTable)
		if tries != step.tries || err == nil || err.Error() != first.Error() {
			t.Fatalf("at +%s: %d tries, %v; want %d tries and the same error", step.after, tries, err, step.tries)
		}
	}
	now = now.Add(5 * time.Minute)
	fake := knftables.NewFake(knftables.IPv4Family, "test-svc")
	tab, err := r.table(now, func() (*svcnft.Table, error) { return svcnft.NewWith(fake, "test-svc", time.Now), nil })
	if tab == nil || err != nil || r.err != nil || r.delay != 0 {
		t.Errorf("a success: %v %v; want the table and the back-off ended", tab, err)
	}
}
