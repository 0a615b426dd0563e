package svcproxy

import (
	"net"
	"net/netip"
	"sort"
)

// bind is where the rule's socket binds: Listen, or for a redirected rule
// Listen's address at port 0 (the kernel picks a free port of
// ip_local_port_range, as for any client socket, never one in
// ip_local_reserved_ports: a host daemon configured on a port of that
// range competes with client sockets already, unless its port is
// reserved; docs/agent.md).
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

// AllowClients makes the listeners of redirected rules serve only clients
// whose address allow accepts (the agent's: the host itself and this
// node's pods, as its table lets in); another client's TCP connection is
// closed at once, its datagram dropped. It is the check behind the table's
// guard: a listener at ClusterIP:<port of the kernel's> is reachable
// directly while the table is gone (flushed by another program). Call it
// before Update.
func (p *Proxy) AllowClients(allow func(netip.Addr) bool) { p.allow = allow }

// refusesClient says whether the rule's listener refuses client.
func (p *Proxy) refusesClient(pt *port, client net.Addr) bool {
	if p.allow == nil || !pt.rule.Redirected {
		return false
	}
	var a netip.Addr
	switch c := client.(type) {
	case *net.TCPAddr:
		a = c.AddrPort().Addr()
	case *net.UDPAddr:
		a = c.AddrPort().Addr()
	}
	if p.allow(a.Unmap()) {
		return false
	}
	p.log.Debug("service proxy: refused a client that is neither the host nor a pod of this node", "rule", pt.rule.Name, "client", client)
	return true
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
