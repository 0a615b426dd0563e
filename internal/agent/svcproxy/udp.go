package svcproxy

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

// udpListener relays datagrams: each client address is a flow, bound to
// one backend while it is active (a connected socket of its own), ended
// after udpIdle without traffic either way.
type udpListener struct {
	p    *Proxy
	pt   *port
	conn *net.UDPConn
	wg   sync.WaitGroup

	mu     sync.Mutex
	flows  map[netip.AddrPort]*udpFlow
	closed bool // no flow opens any more
}

type udpFlow struct {
	backend *net.UDPConn
	seen    time.Time
}

func (p *Proxy) listenUDP(pt *port) (listener, error) {
	addr := net.UDPAddrFromAddrPort(pt.rule.Listen)
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, err
	}
	ul := &udpListener{p: p, pt: pt, conn: conn, flows: map[netip.AddrPort]*udpFlow{}}
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
	for client, f := range ul.flows {
		_ = f.backend.Close() // its reader then ends
		delete(ul.flows, client)
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
		f := ul.flow(client)
		if f == nil {
			continue // no endpoint: dropped, as a port with no endpoints does
		}
		_, _ = f.backend.Write(buf[:n]) // lost like any datagram
	}
}

// flow returns the client's flow, opening one on the next backend.
func (ul *udpListener) flow(client netip.AddrPort) *udpFlow {
	ul.mu.Lock()
	defer ul.mu.Unlock()
	if ul.closed {
		return nil
	}
	if f, ok := ul.flows[client]; ok {
		f.seen = time.Now()
		return f
	}
	if len(ul.flows) >= ul.p.udpMaxFlows {
		return nil // dropped: see DefaultUDPMaxFlows
	}
	for _, b := range ul.pt.pick(client.Addr().Unmap(), ul.p.now()) {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(b))
		if err != nil {
			continue
		}
		ul.pt.connected(client.Addr().Unmap(), b, ul.p.now())
		f := &udpFlow{backend: c, seen: time.Now()}
		ul.flows[client] = f
		ul.wg.Add(1)
		go func() {
			defer ul.wg.Done()
			ul.answer(client, f)
		}()
		return f
	}
	return nil
}

// answer sends the backend's replies to the client until the flow idles.
func (ul *udpListener) answer(client netip.AddrPort, f *udpFlow) {
	defer ul.end(client, f)
	buf := make([]byte, 64<<10)
	for {
		_ = f.backend.SetReadDeadline(time.Now().Add(ul.p.udpIdle)) // a closed socket fails the read below
		n, err := f.backend.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && ul.active(client, f) {
				continue
			}
			return
		}
		ul.touch(f)
		if _, err := ul.conn.WriteToUDPAddrPort(buf[:n], client); errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (ul *udpListener) touch(f *udpFlow) {
	ul.mu.Lock()
	f.seen = time.Now()
	ul.mu.Unlock()
}

// active reports whether the flow saw traffic within the idle time.
func (ul *udpListener) active(client netip.AddrPort, f *udpFlow) bool {
	ul.mu.Lock()
	defer ul.mu.Unlock()
	return ul.flows[client] == f && time.Since(f.seen) < ul.p.udpIdle
}

func (ul *udpListener) end(client netip.AddrPort, f *udpFlow) {
	ul.mu.Lock()
	if ul.flows[client] == f {
		delete(ul.flows, client)
	}
	ul.mu.Unlock()
	_ = f.backend.Close() // may be closed already by close
}
