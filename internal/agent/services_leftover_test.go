package agent

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"testing"
)

// fakeTables are the kernel's Services tables of other names.
type fakeTables struct {
	left    []string
	removed []string
}

func (f *fakeTables) LeftOvers(context.Context, string) ([]string, error) { return f.left, nil }
func (f *fakeTables) Remove(_ context.Context, name string) error {
	f.removed = append(f.removed, name)
	return nil
}

// A Services table another --service-interface left is removed when its
// link is gone; one whose link exists (another agent's) is left alone.
func TestLeftoverTablesRemovedOnlyWithoutTheirLink(t *testing.T) {
	link := newFakeLink()
	if err := link.Sync("other-svc0", []netip.Addr{netip.MustParseAddr("10.97.0.1")}); err != nil {
		t.Fatal(err)
	}
	tables := &fakeTables{left: []string{"old-svc0", "other-svc0"}}
	a := &Agent{log: slog.New(slog.DiscardHandler), svcLink: link, svcLeftovers: tables}
	a.cfg.Services.Interface = "berth-svc0"
	a.removeLeftoverTablesLocked()
	if !slices.Equal(tables.removed, []string{"old-svc0"}) {
		t.Errorf("removed %v; want old-svc0 only (other-svc0's link exists)", tables.removed)
	}
}
