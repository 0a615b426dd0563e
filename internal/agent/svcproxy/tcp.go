package svcproxy

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"time"
)

type tcpListener struct {
	l    net.Listener
	wg   sync.WaitGroup
	done chan struct{}
}

func (p *Proxy) listenTCP(pt *port) (listener, error) {
	l, err := net.Listen("tcp", pt.rule.bind().String())
	if err != nil {
		return nil, err
	}
	tl := &tcpListener{l: l, done: make(chan struct{})}
	tl.wg.Add(1)
	go func() {
		defer tl.wg.Done()
		p.acceptTCP(pt, tl)
	}()
	return tl, nil
}

// close stops accepting; connections already proxied keep going.
func (tl *tcpListener) close() error {
	close(tl.done)
	err := tl.l.Close()
	tl.wg.Wait()
	return err
}

func (p *Proxy) acceptTCP(pt *port, tl *tcpListener) {
	var delay time.Duration
	for {
		c, err := tl.l.Accept()
		if err == nil {
			delay = 0
			if p.refusesClient(pt, c.RemoteAddr()) {
				c.Close()
				continue
			}
			p.take(pt, c.(*net.TCPConn))
			continue
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
		// Out of file descriptors, a connection aborted before it was
		// accepted, ...: the port stays published and tries again, as
		// net/http's server does, until it is closed.
		delay = min(max(2*delay, 5*time.Millisecond), time.Second)
		p.log.Warn("service proxy: accept failed; trying again", "rule", pt.rule.Name, "in", delay, "error", err)
		select {
		case <-tl.done:
			return
		case <-time.After(delay):
		}
	}
}

// take proxies an accepted connection, or resets it at once when the
// total, its Service's or its client address's limit is reached:
// accepting and resetting keeps the accept loop draining the kernel's
// queue, so that the client learns at once instead of waiting in a full
// backlog, and legitimate clients get in as soon as connections end.
func (p *Proxy) take(pt *port, c *net.TCPConn) {
	service := pt.rule.service()
	from := sourceOf(c)
	if limit := p.conns.acquire(service, from); limit != "" {
		p.refuse(pt, c, limit)
		return
	}
	go func() {
		defer p.conns.release(service, from)
		p.proxyTCP(pt, c, from)
	}()
}

// proxyTCP connects the client to the first backend that accepts, its
// session's first, then in round-robin order; with none, the client's
// connection is closed.
func (p *Proxy) proxyTCP(pt *port, client *net.TCPConn, from netip.Addr) {
	defer client.Close()
	for _, b := range pt.pick(from, p.now()) {
		c, err := net.DialTimeout("tcp", b.String(), p.dialTimeout)
		if err != nil {
			p.log.Debug("service proxy: endpoint refused", "rule", pt.rule.Name, "endpoint", b, "error", err)
			continue
		}
		pt.connected(from, b, p.now())
		splice(client, c.(*net.TCPConn), p.limits)
		return
	}
	p.log.Debug("service proxy: no endpoint took the connection", "rule", pt.rule.Name, "client", client.RemoteAddr())
}

// sourceOf is the client address of c; the zero Addr when unknown.
func sourceOf(c *net.TCPConn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok && a != nil {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
