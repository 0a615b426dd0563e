package svcproxy

import (
	"net/netip"
	"time"
)

// The flow table of a UDP port holds at most Limits.UDPMaxFlows flows,
// Limits.UDPMaxFlowsPerSource of one client IP. A new flow makes room:
//
//   - a client IP at its cap ends its own least recently active flow,
//     so one address (a client with many ports, or a spoofer of one)
//     only ever churns its own flows;
//   - a full table ends its least recently active flow that is not
//     assured, as conntrack's early drop does; a flow is assured once its
//     client sent again after the endpoint answered, which a flood of
//     spoofed source addresses (one datagram each) never does, so a
//     client in an exchange keeps its flow while a flood churns its own;
//   - a full table of assured flows ends the least recently active flow
//     of the client IP holding the most.
//
// A new client thus always gets a flow, and no address or flood of
// addresses can take the flows of clients that are talking.

// makeRoom ends a flow when a new one of src would pass a limit.
func (ul *udpListener) makeRoom(src netip.Addr) {
	lim := ul.p.limits
	if mine := ul.bySource[src]; len(mine) >= lim.UDPMaxFlowsPerSource {
		ul.forget(oldest(mine))
		return
	}
	if len(ul.flows) < lim.UDPMaxFlows {
		return
	}
	if e := ul.fresh.Front(); e != nil {
		ul.forget(e.Value.(*udpFlow))
		return
	}
	var busiest map[netip.AddrPort]*udpFlow
	for _, fs := range ul.bySource {
		if len(fs) > len(busiest) {
			busiest = fs
		}
	}
	if f := oldest(busiest); f != nil {
		ul.forget(f)
	}
}

// oldest is the least recently active of fs; nil when fs is empty.
func oldest(fs map[netip.AddrPort]*udpFlow) *udpFlow {
	var o *udpFlow
	for _, f := range fs {
		if o == nil || f.seen.Before(o.seen) {
			o = f
		}
	}
	return o
}

// add puts a new flow in the table.
func (ul *udpListener) add(f *udpFlow) {
	ul.flows[f.client] = f
	src := f.client.Addr()
	if ul.bySource[src] == nil {
		ul.bySource[src] = map[netip.AddrPort]*udpFlow{}
	}
	ul.bySource[src][f.client] = f
	f.fresh = ul.fresh.PushBack(f)
}

// heard records a datagram of the flow's client: the flow is assured when
// the endpoint has answered it, else it moves to the end of the fresh.
func (ul *udpListener) heard(f *udpFlow) {
	f.seen = time.Now()
	switch {
	case f.fresh == nil:
	case f.replied:
		ul.fresh.Remove(f.fresh)
		f.fresh = nil
	default:
		ul.fresh.MoveToBack(f.fresh)
	}
}

// forget takes the flow out of the table, if it is still there, and
// closes its socket (its reader then ends).
func (ul *udpListener) forget(f *udpFlow) {
	if ul.flows[f.client] != f {
		return
	}
	delete(ul.flows, f.client)
	src := f.client.Addr()
	if delete(ul.bySource[src], f.client); len(ul.bySource[src]) == 0 {
		delete(ul.bySource, src)
	}
	if f.fresh != nil {
		ul.fresh.Remove(f.fresh)
		f.fresh = nil
	}
	_ = f.backend.Close()
}
