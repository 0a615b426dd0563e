package agent

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// fakeTables are the kernel's Services tables of other names.
type fakeTables struct {
	tables  []string
	removed []string
}

func (f *fakeTables) LeftOvers(context.Context, string) ([]string, error) {
	return slices.Clone(f.tables), nil
}

func (f *fakeTables) Has(_ context.Context, name string) (bool, error) {
	return slices.Contains(f.tables, name), nil
}

func (f *fakeTables) Remove(_ context.Context, name string) error {
	f.removed = append(f.removed, name)
	f.tables = slices.DeleteFunc(f.tables, func(n string) bool { return n == name })
	return nil
}

// A Services table another --service-interface left is removed when it
// stayed without its link for leftoverGrace; one whose link exists
// (another agent's), or whose link came meanwhile (an agent starting side
// by side), is left alone.
func TestLeftoverTablesRemovedOnlyWithoutTheirLink(t *testing.T) {
	link := newFakeLink()
	if err := link.Sync("other-svc0", []netip.Addr{netip.MustParseAddr("10.97.0.1")}); err != nil {
		t.Fatal(err)
	}
	tables := &fakeTables{tables: []string{"old-svc0", "other-svc0", "starting-svc0"}}
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	a := &Agent{log: slog.New(slog.DiscardHandler), svcLink: link, svcLeftovers: tables, deps: &syncDeps{clock: clk}}
	a.cfg.Services.Interface = "berth-svc0"
	a.findLeftoverTablesLocked()
	a.removeLeftoverTablesLocked()
	if len(tables.removed) != 0 {
		t.Fatalf("removed %v at the first look; want none before leftoverGrace", tables.removed)
	}
	if err := link.Sync("starting-svc0", []netip.Addr{netip.MustParseAddr("10.98.0.1")}); err != nil {
		t.Fatal(err)
	}
	clk.Step(leftoverGrace)
	a.removeLeftoverTablesLocked()
	a.removeLeftoverTablesLocked()
	if !slices.Equal(tables.removed, []string{"old-svc0"}) {
		t.Errorf("removed %v; want old-svc0 only (the others have their link)", tables.removed)
	}
	if len(a.svcLeftoverSeen) != 0 {
		t.Errorf("still watched: %v", a.svcLeftoverSeen)
	}
}
