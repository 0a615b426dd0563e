package svcnft

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/knftables"
)

// Redirect sends a Service port to the agent's listener for it.
type Redirect struct {
	Protocol string         // "TCP" or "UDP"
	Service  netip.AddrPort // what clients use: ClusterIP:port, the DNS address:53
	Listener netip.AddrPort // where the agent listens: the same address, a kernel-chosen port
}

// State is the table's content.
type State struct {
	// Guarded are the addresses only the host and this node's pods may
	// reach: exactly those the agent puts on its service link (the
	// ClusterIPs and the DNS address), never a prefix: a host address
	// that happens to lie in the service range stays the host's.
	Guarded   []netip.Addr
	Redirects []Redirect
	Pods      []netip.Addr // this node's pods' (IPv4) addresses; hostNetwork pods come in on lo
}

// The table's objects.
const (
	setPods      = "pods"
	setGuarded   = "guarded"
	mapRedirects = "redirects"
)

// Fill adds to tx the whole table: its sets and map with st's elements
// and its chains. IPv6 addresses and redirects of other protocols are
// left out (the table is family ip; only TCP and UDP are proxied).
func Fill(tx *knftables.Transaction, st State) {
	tx.Add(&knftables.Table{Comment: knftables.PtrTo("berth agent: Services (ClusterIPs and the cluster DNS)")})
	tx.Add(&knftables.Set{Name: setPods, Type: "ipv4_addr", Comment: knftables.PtrTo("this node's pods")})
	tx.Add(&knftables.Set{Name: setGuarded, Type: "ipv4_addr",
		Comment: knftables.PtrTo("the ClusterIPs and the cluster DNS address (the service link's)")})
	tx.Add(&knftables.Map{Name: mapRedirects, Type: "ipv4_addr . inet_proto . inet_service : ipv4_addr . inet_service",
		Comment: knftables.PtrTo("Service port to the agent's listener")})
	addAddrs(tx, setGuarded, st.Guarded)
	addAddrs(tx, setPods, st.Pods)
	redirects := slices.Clone(st.Redirects)
	slices.SortFunc(redirects, func(a, b Redirect) int {
		if c := a.Service.Compare(b.Service); c != 0 {
			return c
		}
		return strings.Compare(a.Protocol, b.Protocol)
	})
	for _, r := range redirects {
		proto, ok := protocols[strings.ToUpper(r.Protocol)]
		if !ok || !r.Service.Addr().Is4() || !r.Listener.Addr().Is4() {
			continue
		}
		tx.Add(&knftables.Element{Map: mapRedirects,
			Key:   []string{r.Service.Addr().String(), proto, strconv.Itoa(int(r.Service.Port()))},
			Value: []string{r.Listener.Addr().String(), strconv.Itoa(int(r.Listener.Port()))}})
	}
	fillChains(tx)
}

var protocols = map[string]string{"TCP": "tcp", "UDP": "udp"}

// chain is one chain of the table: a base chain when hook is set.
type chain struct {
	name  string
	typ   knftables.BaseChainType
	hook  knftables.BaseChainHook
	prio  knftables.BaseChainPriority
	rules []string
}

var chains = []chain{
	// Before NAT (dstnat - 10): who may reach the guarded addresses at all.
	{"guard", knftables.FilterType, knftables.PreroutingHook, knftables.DNATPriority + "-10",
		[]string{"ip daddr @" + setGuarded + " fib daddr type local jump from-node"}},
	{"from-node", "", "", "", []string{
		`iif "lo" accept`,
		// Reverse path: the route back to the pod leaves by the interface
		// the packet came in on (a LAN neighbour forging a pod's address
		// comes in elsewhere). A bridged pod's packet comes in on the
		// bridge, br_netfilter or not (it sets the bridge as the input
		// device; nft_root_test measures it).
		"ip saddr @" + setPods + " fib saddr . iif oif exists accept",
		"counter drop"}},
	{"redirect-pods", knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority,
		[]string{"dnat ip to ip daddr . meta l4proto . th dport map @" + mapRedirects}},
	{"redirect-host", knftables.NATType, knftables.OutputHook, knftables.DNATPriority,
		[]string{"dnat ip to ip daddr . meta l4proto . th dport map @" + mapRedirects}},
	// After NAT: only the Service ports (translated) reach the addresses.
	{"service-ports", knftables.FilterType, knftables.InputHook, knftables.FilterPriority,
		[]string{"ip daddr @" + setGuarded + " jump redirected-only"}},
	{"redirected-only", "", "", "", []string{
		"ct status dnat accept",
		"ct state established,related accept",
		"reject"}},
}

// fillChains adds the chains, then their rules (a jump needs its target).
func fillChains(tx *knftables.Transaction) {
	for _, c := range chains {
		kc := &knftables.Chain{Name: c.name}
		if c.hook != "" {
			kc.Type, kc.Hook, kc.Priority = &c.typ, &c.hook, &c.prio
		}
		tx.Add(kc)
	}
	for _, c := range chains {
		for _, r := range c.rules {
			tx.Add(&knftables.Rule{Chain: c.name, Rule: r})
		}
	}
}

// addAddrs adds to set the IPv4 addresses of addrs, sorted and once each
// (the same set is the same transaction: Sync skips it).
func addAddrs(tx *knftables.Transaction, set string, addrs []netip.Addr) {
	var v4 []netip.Addr
	for _, a := range addrs {
		if a = a.Unmap(); a.Is4() {
			v4 = append(v4, a)
		}
	}
	slices.SortFunc(v4, netip.Addr.Compare)
	for _, a := range slices.Compact(v4) {
		tx.Add(&knftables.Element{Set: set, Key: []string{a.String()}})
	}
}

// String names a redirect in logs.
func (r Redirect) String() string {
	return fmt.Sprintf("%s %s → %s", r.Protocol, r.Service, r.Listener)
}
