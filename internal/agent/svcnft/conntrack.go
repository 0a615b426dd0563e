package svcnft

import (
	"log/slog"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Conntrack deletes the kernel's connection-tracking entries of a UDP
// redirect whose listener moved (the agent restarted, the Service was
// made again): an entry keeps the DNAT it was made with, so a client
// that sends from one source port at least every 30 s (conntrack's UDP
// timeout) would keep reaching the dead listener's port. kube-proxy
// deletes them for the same reason.
type Conntrack interface {
	// DeleteStaleUDP deletes the UDP entries whose original destination
	// is service and whose reply comes from another port than listener,
	// and returns how many.
	DeleteStaleUDP(service netip.AddrPort, listener uint16) (uint, error)
}

// KernelConntrack is the kernel's table, over netlink.
type KernelConntrack struct{}

// DeleteStaleUDP implements Conntrack.
func (KernelConntrack) DeleteStaleUDP(service netip.AddrPort, listener uint16) (uint, error) {
	return netlink.ConntrackDeleteFilters(netlink.ConntrackTable, netlink.InetFamily(unix.AF_INET), staleUDP{service, listener})
}

// staleUDP matches a UDP entry to service translated to another port
// than listener.
type staleUDP struct {
	service  netip.AddrPort
	listener uint16
}

func (f staleUDP) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	dst, ok := netip.AddrFromSlice(flow.Forward.DstIP)
	return ok && flow.Forward.Protocol == unix.IPPROTO_UDP && dst.Unmap() == f.service.Addr() &&
		flow.Forward.DstPort == f.service.Port() && flow.Reverse.SrcPort != f.listener
}

// SetConntrack makes Sync delete the stale entries of the UDP redirects it
// changes through ct (the agent's: KernelConntrack), logging to log.
func (t *Table) SetConntrack(ct Conntrack, log *slog.Logger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ct, t.log = ct, log
}

// deleteStaleUDP deletes the conntrack entries of the UDP redirects of
// st whose listener is not the one their entries were last cleaned for
// (all of them at the first Sync: a previous agent's listeners are
// gone); a failure is logged and tried again at the next Sync (t.mu
// held; after the table holds st's redirects, or a new packet would make
// an entry to the old port again).
func (t *Table) deleteStaleUDP(redirects []Redirect) {
	if t.ct == nil {
		return
	}
	now := map[netip.AddrPort]uint16{}
	for _, r := range redirects {
		proto, ok := protocols[strings.ToUpper(r.Protocol)]
		if !ok || proto != "udp" || !r.Service.Addr().Is4() {
			continue
		}
		port := r.Listener.Port()
		if done, ok := t.cleaned[r.Service]; ok && done == port {
			now[r.Service] = port
			continue
		}
		n, err := t.ct.DeleteStaleUDP(r.Service, port)
		if err != nil {
			t.log.Warn("services: deleting stale UDP conntrack entries; tried again at the next sync", "service", r.Service, "listener", r.Listener, "error", err)
			continue
		}
		now[r.Service] = port
		if n > 0 {
			t.log.Info("services: deleted stale UDP conntrack entries", "service", r.Service, "listener", r.Listener, "entries", n)
		}
	}
	t.cleaned = now
}
