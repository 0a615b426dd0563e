package svcproxy

import (
	"container/list"
	"net/netip"
	"time"
)

// The flow table of a UDP port holds at most Limits.UDPMaxFlows flows,
// Limits.UDPMaxFlowsPerSource of one client IP, and every port's flows
// count against Limits.MaxConns with the TCP connections. A flow is
// assured, as conntrack's UDP stream, once its client sends a datagram
// after the endpoint answered and at least assureAfter after the flow
// began: a spoofer never sees the answer, and one-off or back-to-back
// blind datagrams never make a flow assured. A new flow makes room:
//
//   - a client IP at its cap ends its own least recently active flow,
//     so one address (a client with many ports, or a spoofer of one)
//     only ever churns its own flows;
//   - a full table (or a full total) ends its least recently active flow
//     that is not assured, as conntrack's early drop does, once the flows
//     not assured hold freshShare of the table; while they hold less, it
//     ends its least recently active flow of either kind.
//
// Thus a flood of new flows churns among its own once it holds its share,
// and an assured client keeps its flow; a client whose flow is new
// competes only with that share and keeps its flow while it talks more
// often than the flood fills the share; and flows made assured by a
// patient spoofer are ended, least recently active first, by clients
// that talk more often than it does. A datagram either way is activity.

// assureAfter is how long after a flow began a datagram of its client
// can make it assured: conntrack's UDP stream timeout starts 2 s after the
// flow's first packet.
const assureAfter = 2 * time.Second

// freshShare is the number of flows not assured that a full table makes
// room for by ending assured ones: an eighth of the table (UDP's share of
// one client address too), at least 2, so that a new flow is not the
// next one's victim merely for being new.
func freshShare(maxFlows int) int { return max(maxFlows/8, 2) }

// makeRoom ends a flow when a new one of src would pass the port's
// limits, and takes the new flow's place in the total (Limits.MaxConns;
// forget gives it back). It reports false when the total is reached and
// the port has no flow to end.
func (ul *udpListener) makeRoom(src netip.Addr) bool {
	lim := ul.p.limits
	if mine := ul.bySource[src]; len(mine) >= lim.UDPMaxFlowsPerSource {
		ul.forget(oldest(mine))
	} else if len(ul.flows) >= lim.UDPMaxFlows {
		ul.forget(ul.victim())
	}
	if ul.p.conns.acquireFlow() {
		return true
	}
	if v := ul.victim(); v != nil { // the total is reached: this port gives one of its own
		ul.forget(v)
		return ul.p.conns.acquireFlow()
	}
	return false
}

// victim is the flow a full table ends (see above); nil when it has none.
func (ul *udpListener) victim() *udpFlow {
	fresh, assured := front(ul.fresh), front(ul.assured)
	switch {
	case fresh == nil:
		return assured
	case assured == nil || ul.fresh.Len() >= freshShare(ul.p.limits.UDPMaxFlows):
		return fresh
	case assured.seq < fresh.seq:
		return assured
	}
	return fresh
}

func front(l *list.List) *udpFlow {
	if e := l.Front(); e != nil {
		return e.Value.(*udpFlow)
	}
	return nil
}

// oldest is the least recently active of fs; nil when fs is empty.
func oldest(fs map[netip.AddrPort]*udpFlow) *udpFlow {
	var o *udpFlow
	for _, f := range fs {
		if o == nil || f.seq < o.seq {
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
	f.began = ul.p.now()
	ul.touch(f)
	f.elem = ul.fresh.PushBack(f)
}

// touch records activity of the flow.
func (ul *udpListener) touch(f *udpFlow) {
	ul.seq++
	f.seq, f.seen = ul.seq, ul.p.now()
	if f.elem != nil {
		ul.listOf(f).MoveToBack(f.elem)
	}
}

// listOf is the list the flow is in.
func (ul *udpListener) listOf(f *udpFlow) *list.List {
	if f.assured {
		return ul.assured
	}
	return ul.fresh
}

// heard records a datagram of the flow's client; after an answer and
// assureAfter, the flow is assured.
func (ul *udpListener) heard(f *udpFlow) {
	ul.touch(f)
	if !f.assured && f.replied && f.seen.Sub(f.began) >= assureAfter {
		ul.fresh.Remove(f.elem)
		f.assured, f.elem = true, ul.assured.PushBack(f)
	}
}

// answered records a datagram of the endpoint's.
func (ul *udpListener) answered(f *udpFlow) {
	ul.mu.Lock()
	defer ul.mu.Unlock()
	if ul.flows[f.client] == f {
		ul.touch(f)
		f.replied = true
	}
}

// forget takes the flow out of the table, if it is still there, gives
// back its place in the total and closes its socket (its reader then
// ends).
func (ul *udpListener) forget(f *udpFlow) {
	if f == nil || ul.flows[f.client] != f {
		return
	}
	delete(ul.flows, f.client)
	src := f.client.Addr()
	if delete(ul.bySource[src], f.client); len(ul.bySource[src]) == 0 {
		delete(ul.bySource, src)
	}
	ul.listOf(f).Remove(f.elem)
	f.elem = nil
	ul.p.conns.releaseFlow()
	_ = f.backend.Close()
}
