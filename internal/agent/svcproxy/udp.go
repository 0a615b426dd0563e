package svcproxy

import (
	"container/list"
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// udpListener relays datagrams: each client address is a flow, bound to
// one backend while it is active (a connected socket of its own), ended
// after UDPIdle without traffic either way. Flows are bounded per port and
// per client IP (flows.go says which one a new flow evicts).
type udpListener struct {
	p    *Proxy
	pt   *port
	conn *net.UDPConn
	wg   sync.WaitGroup

	mu       sync.Mutex
	flows    map[netip.AddrPort]*udpFlow
	bySource map[netip.Addr]map[netip.AddrPort]*udpFlow
	fresh    *list.List // the flows not assured, least recently active first
	assured  *list.List // the assured flows, least recently active first
	seq      uint64     // counts activity: a flow's seq orders it by recency
	closed   bool       // no flow opens any more
}

type udpFlow struct {
	client  netip.AddrPort
	backend *net.UDPConn
	began   time.Time     // on the proxy's clock (Proxy.now)
	seen    time.Time     // the last datagram either way
	seq     uint64        // udpListener.seq at the last datagram either way
	replied bool          // the endpoint answered
	assured bool          // see flows.go
	elem    *list.Element // in udpListener.fresh or .assured
}

func (p *Proxy) listenUDP(pt *port) (listener, error) {
	addr := net.UDPAddrFromAddrPort(pt.rule.bind())
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, err
	}
	ul := &udpListener{p: p, pt: pt, conn: conn, flows: map[netip.AddrPort]*udpFlow{},
		bySource: map[netip.Addr]map[netip.AddrPort]*udpFlow{}, fresh: list.New(), assured: list.New()}
	ul.wg.Add(1)
	go func() {
		defer ul.wg.Done()
		ul.relay()
	}()
	return ul, nil
}

// close ends the listener and every flow.
func (ul *udpListener) close() error {
	err := ul.conn.Close()
	ul.mu.Lock()
	ul.closed = true
	for _, f := range ul.flows {
		ul.forget(f) // its reader then ends
	}
	ul.mu.Unlock()
	ul.wg.Wait()
	return err
}

// relay reads clients' datagrams and sends each on its flow's backend.
func (ul *udpListener) relay() {
	buf := make([]byte, 64<<10)
	for {
		n, client, err := ul.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient error (ICMP) of one datagram
		}
		if ul.p.refusesClient(ul.pt, net.UDPAddrFromAddrPort(client)) {
			continue
		}
		f := ul.flow(client)
		if f == nil {
			continue // no endpoint: dropped, as a port with no endpoints does
		}
		_, _ = f.backend.Write(buf[:n]) // lost like any datagram
	}
}

// flow returns the client's flow, opening one on the next backend (which
// may evict another: see makeRoom).
func (ul *udpListener) flow(client netip.AddrPort) *udpFlow {
	ul.mu.Lock()
	defer ul.mu.Unlock()
	if ul.closed {
		return nil
	}
	if f, ok := ul.flows[client]; ok {
		ul.heard(f)
		return f
	}
	backends := ul.pt.pick(client.Addr().Unmap(), ul.p.now())
	if len(backends) == 0 {
		return nil
	}
	if !ul.makeRoom(client.Addr()) {
		ul.p.refuse(ul.pt, nil, "total")
		return nil
	}
	for _, b := range backends {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(b))
		if err != nil {
			continue
		}
		ul.pt.connected(client.Addr().Unmap(), b, ul.p.now())
		f := &udpFlow{client: client, backend: c}
		ul.add(f)
		ul.wg.Add(1)
		go func() {
			defer ul.wg.Done()
			ul.answer(f)
		}()
		return f
	}
	ul.p.conns.releaseFlow() // no endpoint took it
	return nil
}

// udpBufs are the buffers of the endpoints' datagrams: a flow takes one
// only once its socket is readable, for one read and its write, so an
// idle flow holds none.
var udpBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// answer sends the backend's replies to the client until the flow idles.
func (ul *udpListener) answer(f *udpFlow) {
	defer ul.end(f)
	rc, err := f.backend.SyscallConn()
	for err == nil {
		_ = f.backend.SetReadDeadline(time.Now().Add(ul.p.limits.UDPIdle)) // a closed socket fails the wait below
		if err = waitReadable(rc); err == nil {
			err = ul.pass(f)
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && ul.active(f) {
			err = nil
		}
	}
}

// pass reads a datagram of the endpoint's and sends it to the client.
func (ul *udpListener) pass(f *udpFlow) error {
	bp := udpBufs.Get().(*[]byte)
	defer udpBufs.Put(bp)
	n, err := f.backend.Read(*bp)
	if err != nil {
		return err // closed, or refused (ICMP): the client's next datagram opens a flow anew
	}
	ul.answered(f)
	_, err = ul.conn.WriteToUDPAddrPort((*bp)[:n], f.client)
	if errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// active reports whether the flow saw traffic within the idle time.
func (ul *udpListener) active(f *udpFlow) bool {
	ul.mu.Lock()
	defer ul.mu.Unlock()
	return ul.flows[f.client] == f && ul.p.now().Sub(f.seen) < ul.p.limits.UDPIdle
}

func (ul *udpListener) end(f *udpFlow) {
	ul.mu.Lock()
	ul.forget(f)
	ul.mu.Unlock()
	_ = f.backend.Close() // may be closed already by forget
}
