package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/berth-dev/berth/internal/agent/clusterdns"
	"github.com/berth-dev/berth/internal/agent/svcnet"
	"github.com/berth-dev/berth/internal/agent/svcnft"
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
// address, the nftables table that sends their Service ports to the
// agent's listeners and keeps them to this node, the cluster DNS server,
// and the proxy's listeners (guarded by the agent's mu).
type serviceHost struct {
	cfg   ServicesConfig
	link  serviceLink
	table *svcnft.Table
	pods  *servicePods
	log   *slog.Logger
	proxy *svcproxy.Proxy
	dns   *clusterdns.Server
	stop  context.CancelFunc // the DNS server's; nil when it is not serving
	done  chan error
	// dnsUDP and dnsTCP are where the DNS server listens: the DNS
	// address at ports the kernel chose (the table sends port 53 there).
	dnsUDP, dnsTCP netip.AddrPort
	// addrs are the service link's addresses (the ClusterIPs and the DNS
	// address): exactly what the table guards.
	addrs []netip.Addr
}

func newServiceHost(cfg ServicesConfig, link serviceLink, table *svcnft.Table, pods *servicePods, upstream []string, log *slog.Logger) *serviceHost {
	if len(cfg.Upstream) > 0 {
		upstream = cfg.Upstream
	}
	dns := clusterdns.NewServerWith(cfg.Domain, upstream, log, clusterdns.Options{
		Own:         guardedPrefixes(cfg), // never forwarded to: the ClusterIPs and the DNS address
		MaxForwards: cfg.DNSMaxForwards,
	})
	dns.AllowClients(pods.clientAllowed)
	proxy := svcproxy.New(log, cfg.Proxy)
	proxy.AllowClients(pods.clientAllowed) // its ClusterIP listeners, should the table be gone
	return &serviceHost{
		cfg: cfg, link: link, table: table, pods: pods, log: log,
		proxy: proxy,
		dns:   dns,
	}
}

// up programs the table (its filter before any address it guards
// exists), makes the interface hold addrs (and the DNS address) and the
// DNS server serve.
func (h *serviceHost) up(podAddrs []netip.Addr, live map[string]bool, addrs []netip.Addr) error {
	h.addrs = append(slices.Clip(addrs), h.cfg.ClusterDNS)
	if err := h.program(podAddrs, live); err != nil {
		return err
	}
	if err := h.link.Sync(h.cfg.Interface, h.addrs); err != nil {
		return err
	}
	if h.stop != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := net.JoinHostPort(h.cfg.ClusterDNS.String(), "0")
	ready := make(chan [2]net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- h.dns.ListenAndServe(ctx, addr, func(udp, tcp net.Addr) { ready <- [2]net.Addr{udp, tcp} })
	}()
	select {
	case bound := <-ready:
		h.stop, h.done = cancel, done
		h.dnsUDP, h.dnsTCP = bound[0].(*net.UDPAddr).AddrPort(), bound[1].(*net.TCPAddr).AddrPort()
		h.log.Info("cluster DNS serving", "address", netip.AddrPortFrom(h.cfg.ClusterDNS, uint16(h.cfg.DNSPort)),
			"udp", h.dnsUDP, "tcp", h.dnsTCP, "domain", h.cfg.Domain)
		return h.program(podAddrs, live)
	case err := <-done:
		cancel()
		return fmt.Errorf("cluster DNS on %s: %w", addr, err)
	case <-time.After(10 * time.Second):
		cancel()
		return fmt.Errorf("cluster DNS on %s: not listening after 10s", addr)
	}
}

// program makes the table send the Service ports to the listeners open
// now (the proxy's ClusterIP listeners, the DNS server's) and let in the
// host and the pods.
func (h *serviceHost) program(podAddrs []netip.Addr, live map[string]bool) error {
	st := svcnft.State{Pods: podAddrs, Guarded: h.addrs}
	if h.stop != nil {
		dns := netip.AddrPortFrom(h.cfg.ClusterDNS, uint16(h.cfg.DNSPort))
		st.Redirects = append(st.Redirects,
			svcnft.Redirect{Protocol: "UDP", Service: dns, Listener: h.dnsUDP},
			svcnft.Redirect{Protocol: "TCP", Service: dns, Listener: h.dnsTCP})
	}
	for _, b := range h.proxy.Bound() {
		st.Redirects = append(st.Redirects, svcnft.Redirect{Protocol: b.Protocol, Service: b.Listen, Listener: b.Addr})
	}
	return h.pods.sync(h.table, st, live)
}

// close stops the listeners (the proxy's and the DNS server's); the
// interface and the table stay, for the next agent to adopt.
func (h *serviceHost) close() error {
	err := h.proxy.Close()
	if h.stop != nil {
		h.stop()
		err = errors.Join(err, <-h.done)
		h.stop, h.done = nil, nil
	}
	return err
}

// down closes the listeners and removes the table and the interface: the
// agent has no Service left.
func (h *serviceHost) down() error {
	err := h.close()
	h.pods.forget()
	ctx, cancel := context.WithTimeout(context.Background(), nftTimeout)
	defer cancel()
	err = errors.Join(err, h.table.Remove(ctx))
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
