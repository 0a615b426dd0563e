package svcnft

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/knftables"
)

// Table is the agent's table "ip <name>" in the kernel.
type Table struct {
	name string
	nft  knftables.Interface
	now  func() time.Time

	mu      sync.Mutex
	applied string    // the last transaction Sync ran; "" after a change outside Sync
	at      time.Time // when
	checked time.Time // when Sync last found its chains there
	ct      Conntrack // nil: none cleaned (NewWith)
	log     *slog.Logger
	cleaned map[netip.AddrPort]uint16 // UDP Service → the listener port its entries were cleaned for
}

// Resync is how often Sync replaces an unchanged table anyway: a set
// another program flushed comes back within it.
const Resync = time.Minute

// Recheck is how often Sync looks whether an unchanged table's chains are
// all there (one cheap listing): a table another program deleted
// (`nft flush ruleset`, a restart of the nftables service) comes back
// within it.
const Recheck = 5 * time.Second

// New returns the table name, programmed through nft (the nftables
// package's binary); an error when nft cannot run.
func New(name string, now func() time.Time) (*Table, error) {
	nft, err := knftables.New(knftables.IPv4Family, name)
	if err != nil {
		return nil, fmt.Errorf("nftables table ip %s: %w", name, err)
	}
	return NewWith(nft, name, now), nil
}

// NewWith returns the table programmed through nft (tests pass
// knftables.NewFake).
func NewWith(nft knftables.Interface, name string, now func() time.Time) *Table {
	return &Table{name: name, nft: nft, now: now, log: slog.New(slog.DiscardHandler)}
}

// Sync makes the table hold exactly st, in one transaction that deletes
// and adds it whole; an unchanged state is not applied again within
// Resync. Then the conntrack entries of a UDP redirect whose listener
// changed are deleted (Conntrack).
func (t *Table) Sync(ctx context.Context, st State) error {
	tx := t.nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	Fill(tx, st)
	t.mu.Lock()
	defer t.mu.Unlock()
	s := tx.String()
	if s != t.applied || t.now().Sub(t.at) >= Resync || !t.intact(ctx) {
		if err := t.nft.Run(ctx, tx); err != nil {
			t.applied = ""
			return fmt.Errorf("nftables table ip %s: %w", t.name, err)
		}
		t.applied, t.at, t.checked = s, t.now(), t.now()
	}
	t.deleteStaleUDP(st.Redirects)
	return nil
}

// intact says whether the table applied last is still whole, as far as a
// listing of its chains every Recheck tells (t.mu held); a table or chain
// gone, or a failed listing, is not.
func (t *Table) intact(ctx context.Context) bool {
	if t.now().Sub(t.checked) < Recheck {
		return true
	}
	have, err := t.nft.List(ctx, "chains")
	if err != nil {
		return false
	}
	for _, c := range chains {
		if !slices.Contains(have, c.name) {
			return false
		}
	}
	t.checked = t.now()
	return true
}

// AddPods adds addresses of this node's pods to the table's set (a pod
// that just started reaches the ClusterIPs and the DNS before the next
// Sync). The table must exist.
func (t *Table) AddPods(ctx context.Context, addrs []netip.Addr) error {
	tx := t.nft.NewTransaction()
	addAddrs(tx, setPods, addrs)
	if tx.NumOperations() == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.applied = "" // the next Sync writes the set whole again
	if err := t.nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("nftables table ip %s: adding pod addresses: %w", t.name, err)
	}
	return nil
}

// Pods are the addresses in the kernel's pods set now (none when the
// table is not there): an agent that starts keeps its predecessor's until
// its own workers know the pods again.
func (t *Table) Pods(ctx context.Context) ([]netip.Addr, error) {
	elems, err := t.nft.ListElements(ctx, "set", setPods)
	if err != nil {
		if knftables.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("nftables table ip %s: listing set %s: %w", t.name, setPods, err)
	}
	var out []netip.Addr
	for _, e := range elems {
		if len(e.Key) == 1 {
			if a, err := netip.ParseAddr(e.Key[0]); err == nil {
				out = append(out, a)
			}
		}
	}
	return out, nil
}

// Exists says whether the table is there.
func (t *Table) Exists(ctx context.Context) (bool, error) {
	_, err := t.nft.List(ctx, "chains")
	switch {
	case err == nil:
		return true, nil
	case knftables.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("nftables table ip %s: %w", t.name, err)
	}
}

// Remove deletes the table; an absent one is not an error.
func (t *Table) Remove(ctx context.Context) error {
	tx := t.nft.NewTransaction()
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	t.mu.Lock()
	defer t.mu.Unlock()
	t.applied = ""
	if err := t.nft.Run(ctx, tx); err != nil {
		return fmt.Errorf("nftables table ip %s: removing: %w", t.name, err)
	}
	return nil
}
