package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/berth-dev/berth/internal/agent/clusterdns"
	"github.com/berth-dev/berth/internal/agent/svcnet"
	"github.com/berth-dev/berth/internal/agent/svcproxy"
)

// serviceLink is the service interface's operations (package svcnet).
type serviceLink interface {
	Sync(name string, addrs []netip.Addr) error
	Exists(name string) bool
	Remove(name string) error
}

type svcnetLink struct{}

func (svcnetLink) Sync(name string, addrs []netip.Addr) error { return svcnet.Sync(name, addrs) }
func (svcnetLink) Exists(name string) bool                    { return svcnet.Exists(name) }
func (svcnetLink) Remove(name string) error                   { return svcnet.Remove(name) }

// link is the agent's serviceLink.
func (a *Agent) link() serviceLink {
	if a.svcLink == nil {
		return svcnetLink{}
	}
	return a.svcLink
}

// serviceHost is what the agent runs on the host for its Services while
// it has any: the service interface with the ClusterIPs and the DNS
// address, the cluster DNS server, and the proxy's listeners (guarded by
// the agent's mu).
type serviceHost struct {
	cfg   ServicesConfig
	link  serviceLink
	log   *slog.Logger
	proxy *svcproxy.Proxy
	dns   *clusterdns.Server
	stop  context.CancelFunc // the DNS server's; nil when it is not serving
	done  chan error
}

func newServiceHost(cfg ServicesConfig, link serviceLink, upstream []string, log *slog.Logger) *serviceHost {
	if len(cfg.Upstream) > 0 {
		upstream = cfg.Upstream
	}
	return &serviceHost{
		cfg: cfg, link: link, log: log,
		proxy: svcproxy.New(log, cfg.Proxy),
		dns: clusterdns.NewServerWith(cfg.Domain, upstream, log, clusterdns.Options{
			// never forwarded to: the ClusterIPs and the DNS address
			Own:         []netip.Prefix{cfg.Range.Prefix, netip.PrefixFrom(cfg.ClusterDNS, cfg.ClusterDNS.BitLen())},
			MaxForwards: cfg.DNSMaxForwards,
		}),
	}
}

// up makes the interface hold addrs (and the DNS address) and the DNS
// server serve.
func (h *serviceHost) up(addrs []netip.Addr) error {
	if err := h.link.Sync(h.cfg.Interface, append(addrs, h.cfg.ClusterDNS)); err != nil {
		return err
	}
	if h.stop != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := net.JoinHostPort(h.cfg.ClusterDNS.String(), strconv.Itoa(h.cfg.DNSPort))
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- h.dns.ListenAndServe(ctx, addr, func(net.Addr, net.Addr) { close(ready) }) }()
	select {
	case <-ready:
		h.stop, h.done = cancel, done
		h.log.Info("cluster DNS serving", "address", addr, "domain", h.cfg.Domain)
		return nil
	case err := <-done:
		cancel()
		return fmt.Errorf("cluster DNS on %s: %w", addr, err)
	case <-time.After(10 * time.Second):
		cancel()
		return fmt.Errorf("cluster DNS on %s: not listening after 10s", addr)
	}
}

// close stops the listeners (the proxy's and the DNS server's); the
// interface stays, for the next agent to adopt.
func (h *serviceHost) close() error {
	err := h.proxy.Close()
	if h.stop != nil {
		h.stop()
		err = errors.Join(err, <-h.done)
		h.stop, h.done = nil, nil
	}
	return err
}

// down closes the listeners and removes the interface: the agent has no
// Service left.
func (h *serviceHost) down() error {
	err := h.close()
	if h.link.Exists(h.cfg.Interface) {
		err = errors.Join(err, h.link.Remove(h.cfg.Interface))
		h.log.Info("service interface removed: no Service left", "interface", h.cfg.Interface)
	}
	return err
}

// closeServiceHost stops the Services' listeners when the agent stops.
func (a *Agent) closeServiceHost() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.svcHost != nil {
		if err := a.svcHost.close(); err != nil {
			a.log.Error("services: closing the listeners", "error", err)
		}
	}
}
