package svcproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

type tcpListener struct {
	l    net.Listener
	wg   sync.WaitGroup
	done chan struct{}
}

func (p *Proxy) listenTCP(pt *port) (listener, error) {
	l, err := net.Listen("tcp", pt.rule.Listen.String())
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
			go p.proxyTCP(pt, c.(*net.TCPConn))
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

// proxyTCP connects the client to the first backend that accepts, its
// session's first, then in round-robin order; with none, the client's
// connection is closed.
func (p *Proxy) proxyTCP(pt *port, client *net.TCPConn) {
	defer client.Close()
	from := client.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	for _, b := range pt.pick(from, p.now()) {
		c, err := net.DialTimeout("tcp", b.String(), p.dialTimeout)
		if err != nil {
			p.log.Debug("service proxy: endpoint refused", "rule", pt.rule.Name, "endpoint", b, "error", err)
			continue
		}
		pt.connected(from, b, p.now())
		splice(client, c.(*net.TCPConn))
		return
	}
	p.log.Debug("service proxy: no endpoint took the connection", "rule", pt.rule.Name, "client", client.RemoteAddr())
}

// splice copies both ways, passing each side's end of data on as a half
// close, until both directions are done.
func splice(a, b *net.TCPConn) {
	defer b.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src *net.TCPConn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src) // an error ends this direction as EOF does
		_ = dst.CloseWrite()     // the peer may already be gone
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}
