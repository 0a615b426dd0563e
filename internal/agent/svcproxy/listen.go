package svcproxy

import (
	"net"
	"net/netip"
	"sort"
)

// bind is where the rule's socket binds: Listen, or for a redirected rule
// Listen's address at port 0 (the kernel picks a free port of its local
// port range, as for any client socket; never one in
// ip_local_reserved_ports, so no port a host daemon is configured on).
func (r Rule) bind() netip.AddrPort {
	if r.Redirected {
		return netip.AddrPortFrom(r.Listen.Addr(), 0)
	}
	return r.Listen
}

func (tl *tcpListener) addr() netip.AddrPort {
	return tl.l.Addr().(*net.TCPAddr).AddrPort()
}

func (ul *udpListener) addr() netip.AddrPort {
	return ul.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Bound is where the listener of a rule is.
type Bound struct {
	Protocol string
	Listen   netip.AddrPort // the rule's
	Addr     netip.AddrPort // the socket's: Listen, or a kernel-chosen port of a redirected rule
}

// Bound lists the open listeners of redirected rules, by protocol and
// Listen: what the agent's DNAT sends Listen to.
func (p *Proxy) Bound() []Bound {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Bound
	for _, pt := range p.ports {
		if pt.rule.Redirected {
			out = append(out, Bound{Protocol: pt.rule.Protocol, Listen: pt.rule.Listen, Addr: pt.l.addr()})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Listen != out[j].Listen {
			return out[i].Listen.Compare(out[j].Listen) < 0
		}
		return out[i].Protocol < out[j].Protocol
	})
	return out
}
