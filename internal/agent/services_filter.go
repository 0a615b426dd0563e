package agent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-dev/berth/internal/agent/svcnft"
)

// nftTimeout bounds one nft run of the Services' table.
const nftTimeout = 10 * time.Second

// servicePods are this node's pod addresses the Services' table lets in
// (svcnft): those of the pods' statuses, given at each Services sync, and
// those of sandboxes just made, added at once by the worker that made
// them (its status shows them only at the end of its sync, after the
// containers started: a container's first DNS query must not be
// dropped). It holds the table while the agent has Services, and the
// client check of the DNS server.
type servicePods struct {
	mu      sync.Mutex
	started map[string][]netip.Addr // by pod uid, until the worker is gone
	table   *svcnft.Table           // nil: no Service
	allowed atomic.Pointer[map[netip.Addr]bool]
	// recovering: the agent's workers are not recovered yet (its first
	// Services sync runs before them); the kernel's pods set, which the
	// previous agent wrote, is kept: the running pods keep reaching the
	// ClusterIPs and the DNS meanwhile.
	recovering bool
}

func newServicePods() *servicePods {
	return &servicePods{started: map[string][]netip.Addr{}, recovering: true}
}

// workersRecovered ends the recovery: from the next sync on, the pods
// set holds the workers' pods only.
func (p *servicePods) workersRecovered() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.recovering = false
	p.mu.Unlock()
}

// sandboxStarted records the new sandbox's addresses of pod uid and, while
// the table exists, adds them to it (a nil p: nothing to do).
func (p *servicePods) sandboxStarted(ctx context.Context, uid string, ips []string) error {
	if p == nil {
		return nil
	}
	var addrs []netip.Addr
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil {
			addrs = append(addrs, a.Unmap())
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started[uid] = addrs
	p.allow(addrs)
	if p.table == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, nftTimeout)
	defer cancel()
	return p.table.AddPods(ctx, addrs)
}

// allow adds addrs to the DNS server's clients (p.mu held).
func (p *servicePods) allow(addrs []netip.Addr) {
	next := map[netip.Addr]bool{}
	if cur := p.allowed.Load(); cur != nil {
		for a := range *cur {
			next[a] = true
		}
	}
	for _, a := range addrs {
		next[a] = true
	}
	p.allowed.Store(&next)
}

// sync programs the table with st, its pods those given (the statuses')
// and those of sandboxes started by the live workers; the others' are
// forgotten.
func (p *servicePods) sync(table *svcnft.Table, st svcnft.State, live map[string]bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.table = table
	for uid, addrs := range p.started {
		if !live[uid] {
			delete(p.started, uid)
			continue
		}
		st.Pods = append(st.Pods, addrs...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), nftTimeout)
	defer cancel()
	if p.recovering {
		kept, err := table.Pods(ctx)
		if err != nil {
			return err
		}
		st.Pods = append(st.Pods, kept...)
	}
	allowed := map[netip.Addr]bool{}
	for _, a := range st.Pods {
		allowed[a.Unmap()] = true
	}
	p.allowed.Store(&allowed)
	return table.Sync(ctx, st)
}

// forget drops the table (removed with the last Service).
func (p *servicePods) forget() {
	p.mu.Lock()
	p.table = nil
	p.mu.Unlock()
}

// isPod says whether a is an address of this node's pods.
func (p *servicePods) isPod(a netip.Addr) bool {
	m := p.allowed.Load()
	return m != nil && (*m)[a.Unmap()]
}

// clientAllowed is the client check of the cluster DNS server and of the
// proxy's redirected listeners: the host itself (a local address:
// loopback, the host's interfaces', the service link's) or a pod of this
// node. The table drops anyone else's packets first; this refuses them
// again should the table be gone (flushed by another program).
func (p *servicePods) clientAllowed(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || p.isPod(a) || isLocalAddr(a)
}

// isLocalAddr says whether a is an address of one of the host's
// interfaces.
func isLocalAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, x := range addrs {
		if n, ok := x.(*net.IPNet); ok {
			if b, ok := netip.AddrFromSlice(n.IP); ok && b.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// tableRetry holds back the making of the Services' table after it
// failed (no nft binary, or one older than knftables needs): making it
// runs nft twice, and the Services sync runs every second under the
// agent's lock. A failure is retried after serviceTableRetry, doubling up
// to serviceTableRetryMax; until then the same error is returned (one
// event and log per Service, as the problem does not change).
type tableRetry struct {
	err   error
	at    time.Time // the next try
	delay time.Duration
}

const (
	serviceTableRetry    = 30 * time.Second
	serviceTableRetryMax = 5 * time.Minute
)

// table returns newTable's table, or the last failure while its back-off
// runs.
func (r *tableRetry) table(now time.Time, newTable func() (*svcnft.Table, error)) (*svcnft.Table, error) {
	if r.err != nil && now.Before(r.at) {
		return nil, r.err
	}
	t, err := newTable()
	if err != nil {
		r.delay = min(max(2*r.delay, serviceTableRetry), serviceTableRetryMax)
		r.at = now.Add(r.delay)
		r.err = fmt.Errorf("%w (the Services need the nft binary, version 1.0.1 or later; retried every %s at most)", err, serviceTableRetryMax)
		return nil, r.err
	}
	r.err, r.delay = nil, 0
	return t, nil
}

// newServiceTable returns the Services' table, named after the service
// interface, through nft (a.svcNft in tests).
func (a *Agent) newServiceTable() (*svcnft.Table, error) {
	cfg := a.cfg.Services
	if a.svcNft != nil {
		return svcnft.NewWith(a.svcNft, cfg.Interface, a.deps.clock.Now), nil
	}
	t, err := svcnft.New(cfg.Interface, a.deps.clock.Now)
	if err != nil {
		return nil, err
	}
	t.SetConntrack(svcnft.KernelConntrack{}, a.log.With("component", "services"))
	return t, nil
}

func guardedPrefixes(cfg ServicesConfig) []netip.Prefix {
	return []netip.Prefix{cfg.Range.Prefix, netip.PrefixFrom(cfg.ClusterDNS, cfg.ClusterDNS.BitLen())}
}
