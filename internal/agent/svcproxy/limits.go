package svcproxy

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits bound what clients can make the proxy hold: a flood of
// connections or datagrams costs the agent (which also serves the
// runtime's API) a bounded number of file descriptors and goroutines.
// A zero field takes its default.
type Limits struct {
	// MaxConns bounds the TCP connections and UDP flows proxied at once,
	// every port together (a connection holds two descriptors, the
	// client's and the endpoint's; a flow one, its socket to the
	// endpoint). Default DefaultMaxConns, or a quarter of the process's
	// descriptor limit when that is less.
	MaxConns int
	// MaxConnsPerService bounds the TCP connections of one Service
	// (Rule.Service), its ports and listeners together; default
	// DefaultMaxConnsPerService.
	MaxConnsPerService int
	// MaxConnsPerSource bounds those of one client address (IP) to one
	// Service; default DefaultMaxConnsPerSource, at most
	// MaxConnsPerService.
	MaxConnsPerSource int
	// TCPIdle closes a proxied connection after this long without a byte
	// either way; default DefaultTCPIdle.
	TCPIdle time.Duration
	// TCPFirstByte closes a proxied connection on which no byte went
	// either way this long after it was made; default
	// DefaultTCPFirstByte, at most TCPIdle.
	TCPFirstByte time.Duration
	// TCPHalfClosed closes a connection one side of which has ended after
	// this long without a byte; default DefaultTCPHalfClosed, at most
	// TCPIdle.
	TCPHalfClosed time.Duration
	// UDPIdle ends a UDP flow after this long without a datagram either
	// way; default DefaultUDPIdle.
	UDPIdle time.Duration
	// UDPMaxFlows bounds the client flows of one UDP port; default
	// DefaultUDPMaxFlows.
	UDPMaxFlows int
	// UDPMaxFlowsPerSource bounds those of one client address (IP) on one
	// UDP port; default DefaultUDPMaxFlowsPerSource.
	UDPMaxFlowsPerSource int
}

// Defaults of Limits.
const (
	// DefaultMaxConns is the total cap of TCP connections and UDP flows
	// (at most 32768 descriptors).
	DefaultMaxConns = 16384
	// DefaultMaxConnsPerService is Envoy's default circuit breaker
	// (max_connections) of a cluster.
	DefaultMaxConnsPerService = 1024
	// DefaultMaxConnsPerSource is an eighth of DefaultMaxConnsPerService,
	// as UDP's share of one client address: eight addresses at least
	// are needed to take all of a Service's connections.
	DefaultMaxConnsPerSource = 128
	// DefaultTCPIdle is Envoy's tcp_proxy default idle_timeout.
	DefaultTCPIdle = time.Hour
	// DefaultTCPFirstByte is nginx's client_header_timeout: a client that
	// connects and says nothing (and an endpoint that greets nobody) holds
	// its place a minute, not TCPIdle.
	DefaultTCPFirstByte = time.Minute
	// DefaultTCPHalfClosed is conntrack's FIN_WAIT timeout
	// (nf_conntrack_tcp_timeout_fin_wait).
	DefaultTCPHalfClosed = 2 * time.Minute
	// DefaultUDPIdle is conntrack's timeout of an unreplied UDP flow.
	DefaultUDPIdle = 30 * time.Second
	// DefaultUDPMaxFlows bounds the flows of one UDP port: each holds a
	// socket of the agent's until it idles.
	DefaultUDPMaxFlows = 1024
	// DefaultUDPMaxFlowsPerSource is an eighth of DefaultUDPMaxFlows: one
	// client address takes at most that share of a port's flows.
	DefaultUDPMaxFlowsPerSource = 128
)

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	orDefault := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	orDefaultTime := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	orDefault(&l.MaxConns, defaultMaxConns())
	orDefault(&l.MaxConnsPerService, DefaultMaxConnsPerService)
	orDefault(&l.MaxConnsPerSource, DefaultMaxConnsPerSource)
	orDefault(&l.UDPMaxFlows, DefaultUDPMaxFlows)
	orDefault(&l.UDPMaxFlowsPerSource, DefaultUDPMaxFlowsPerSource)
	orDefaultTime(&l.TCPIdle, DefaultTCPIdle)
	orDefaultTime(&l.TCPFirstByte, DefaultTCPFirstByte)
	orDefaultTime(&l.TCPHalfClosed, DefaultTCPHalfClosed)
	orDefaultTime(&l.UDPIdle, DefaultUDPIdle)
	l.MaxConnsPerSource = min(l.MaxConnsPerSource, l.MaxConnsPerService)
	l.UDPMaxFlowsPerSource = min(l.UDPMaxFlowsPerSource, l.UDPMaxFlows)
	l.TCPFirstByte = min(l.TCPFirstByte, l.TCPIdle)
	l.TCPHalfClosed = min(l.TCPHalfClosed, l.TCPIdle)
	return l
}

// defaultMaxConns is DefaultMaxConns, or a quarter of the descriptor
// limit when that is less: the connections' two descriptors each then
// take at most half of them, leaving the rest to the runtime's API.
func defaultMaxConns() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur/4 >= DefaultMaxConns {
		return DefaultMaxConns
	}
	return max(int(r.Cur/4), 1)
}

// connCount counts the proxied TCP connections, in all, by Service and
// by Service and client address, and the UDP flows in the total.
type connCount struct {
	mu             sync.Mutex
	max, per, perS int
	total          int
	byService      map[string]int
	bySource       map[serviceSource]int
}

type serviceSource struct {
	service string
	source  netip.Addr
}

func newConnCount(l Limits) *connCount {
	return &connCount{max: l.MaxConns, per: l.MaxConnsPerService, perS: l.MaxConnsPerSource,
		byService: map[string]int{}, bySource: map[serviceSource]int{}}
}

// acquire takes a connection of service from source; "" when it may,
// else the limit it would pass.
func (c *connCount) acquire(service string, source netip.Addr) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := serviceSource{service, source}
	switch {
	case c.total >= c.max:
		return "total"
	case c.byService[service] >= c.per:
		return "per-Service"
	case c.bySource[key] >= c.perS:
		return "per-source"
	}
	c.total++
	c.byService[service]++
	c.bySource[key]++
	return ""
}

// release gives back a connection acquire took.
func (c *connCount) release(service string, source netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.byService[service]--; c.byService[service] <= 0 {
		delete(c.byService, service)
	}
	key := serviceSource{service, source}
	if c.bySource[key]--; c.bySource[key] <= 0 {
		delete(c.bySource, key)
	}
}

// acquireFlow takes a UDP flow's place in the total; false when none is
// left.
func (c *connCount) acquireFlow() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.total >= c.max {
		return false
	}
	c.total++
	return true
}

// releaseFlow gives back a place acquireFlow took.
func (c *connCount) releaseFlow() {
	c.mu.Lock()
	c.total--
	c.mu.Unlock()
}

// held returns the connections and flows held in all, and the
// connections of service.
func (c *connCount) held(service string) (total, ofService int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.byService[service]
}

// refuse closes a connection over a limit at once, with a reset (c nil:
// a UDP flow the total left no room for, its datagram dropped), and warns
// at most once a minute per port, saying how many it refused.
func (p *Proxy) refuse(pt *port, c *net.TCPConn, limit string) {
	if c != nil {
		_ = c.SetLinger(0) // a reset: the client learns now, and no TIME_WAIT is left here
		_ = c.Close()
	}
	n := pt.refused.Add(1)
	now := time.Now().UnixNano()
	last := pt.warned.Load()
	if now-last < int64(time.Minute) || !pt.warned.CompareAndSwap(last, now) {
		return
	}
	pt.refused.Store(0)
	what := "resetting new connections"
	if c == nil {
		what = "dropping new UDP flows"
	}
	p.log.Warn("service proxy: connection limit reached; "+what,
		"rule", pt.rule.Name, "limit", limit, "max", p.limitOf(limit), "refused", n)
}

func (p *Proxy) limitOf(limit string) int {
	switch limit {
	case "total":
		return p.limits.MaxConns
	case "per-source":
		return p.limits.MaxConnsPerSource
	}
	return p.limits.MaxConnsPerService
}

// refusals are a port's counters of refused connections.
type refusals struct {
	refused atomic.Int64
	warned  atomic.Int64 // unix nanoseconds of the last warning
}
