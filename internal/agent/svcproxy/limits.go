package svcproxy

import (
	"net"
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
	// MaxConns bounds the TCP connections proxied at once, every port
	// together (each holds two descriptors: the client's and the
	// endpoint's). Default DefaultMaxConns, or a quarter of the process's
	// descriptor limit when that is less.
	MaxConns int
	// MaxConnsPerService bounds those of one Service (Rule.Service), its
	// ports and listeners together; default DefaultMaxConnsPerService.
	MaxConnsPerService int
	// TCPIdle closes a proxied connection after this long without a byte
	// either way (a half-closed one too); default DefaultTCPIdle.
	TCPIdle time.Duration
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
	// DefaultMaxConns is the total TCP connection cap (32768 descriptors).
	DefaultMaxConns = 16384
	// DefaultMaxConnsPerService is Envoy's default circuit breaker
	// (max_connections) of a cluster.
	DefaultMaxConnsPerService = 1024
	// DefaultTCPIdle is Envoy's tcp_proxy default idle_timeout.
	DefaultTCPIdle = time.Hour
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
	if l.MaxConns <= 0 {
		l.MaxConns = defaultMaxConns()
	}
	if l.MaxConnsPerService <= 0 {
		l.MaxConnsPerService = DefaultMaxConnsPerService
	}
	if l.TCPIdle <= 0 {
		l.TCPIdle = DefaultTCPIdle
	}
	if l.UDPIdle <= 0 {
		l.UDPIdle = DefaultUDPIdle
	}
	if l.UDPMaxFlows <= 0 {
		l.UDPMaxFlows = DefaultUDPMaxFlows
	}
	if l.UDPMaxFlowsPerSource <= 0 {
		l.UDPMaxFlowsPerSource = DefaultUDPMaxFlowsPerSource
	}
	l.UDPMaxFlowsPerSource = min(l.UDPMaxFlowsPerSource, l.UDPMaxFlows)
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

// connCount counts the proxied TCP connections, in all and by Service.
type connCount struct {
	mu        sync.Mutex
	max, per  int
	total     int
	byService map[string]int
}

func newConnCount(max, per int) *connCount {
	return &connCount{max: max, per: per, byService: map[string]int{}}
}

// acquire takes a connection of service; "" when it may, else the limit
// it would pass.
func (c *connCount) acquire(service string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.total >= c.max:
		return "total"
	case c.byService[service] >= c.per:
		return "per-Service"
	}
	c.total++
	c.byService[service]++
	return ""
}

// release gives back a connection acquire took.
func (c *connCount) release(service string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.byService[service]--; c.byService[service] <= 0 {
		delete(c.byService, service)
	}
}

// held returns the connections held: in all and of service.
func (c *connCount) held(service string) (total, ofService int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total, c.byService[service]
}

// refuse closes a connection over a limit at once, with a reset, and
// warns at most once a minute per port, saying how many it refused.
func (p *Proxy) refuse(pt *port, c *net.TCPConn, limit string) {
	_ = c.SetLinger(0) // a reset: the client learns now, and no TIME_WAIT is left here
	_ = c.Close()
	n := pt.refused.Add(1)
	now := time.Now().UnixNano()
	last := pt.warned.Load()
	if now-last < int64(time.Minute) || !pt.warned.CompareAndSwap(last, now) {
		return
	}
	pt.refused.Store(0)
	p.log.Warn("service proxy: connection limit reached; resetting new connections",
		"rule", pt.rule.Name, "limit", limit, "max", p.limitOf(limit), "refused", n)
}

func (p *Proxy) limitOf(limit string) int {
	if limit == "total" {
		return p.limits.MaxConns
	}
	return p.limits.MaxConnsPerService
}

// refusals are a port's counters of refused connections.
type refusals struct {
	refused atomic.Int64
	warned  atomic.Int64 // unix nanoseconds of the last warning
}
