package agent

import (
	"context"
	"time"

	"github.com/berth-dev/berth/internal/agent/svcnft"
)

// leftoverTables finds and removes the kernel's Services tables of other
// names (package svcnft; tests fake it).
type leftoverTables interface {
	LeftOvers(ctx context.Context, own string) ([]string, error)
	Has(ctx context.Context, name string) (bool, error)
	Remove(ctx context.Context, name string) error
}

type kernelTables struct{ now func() time.Time }

func (kernelTables) LeftOvers(ctx context.Context, own string) ([]string, error) {
	return svcnft.LeftOvers(ctx, own)
}

func (kernelTables) Has(ctx context.Context, name string) (bool, error) {
	return svcnft.HasServicesTable(ctx, name)
}

func (k kernelTables) Remove(ctx context.Context, name string) error {
	t, err := svcnft.New(name, k.now)
	if err != nil {
		return err
	}
	return t.Remove(ctx)
}

// leftoverGrace is how long a Services table of another name stays
// without its link before it is taken for left over: an agent programs
// its table a moment before it adds its link (and its agent may be
// starting right now, side by side with this one).
const leftoverGrace = 10 * time.Second

// The Services tables an agent run with another --service-interface left
// are removed: an ip table whose objects are exactly a Services table's
// (svcnft.LeftOvers) and whose service link is gone, at two looks
// leftoverGrace apart. While an agent has Services it has its link, but
// for the moment between programming its table and adding the link; a
// table without one for longer serves no agent, and its guard and DNAT
// map would take the ClusterIPs this agent reuses. A table whose link
// exists is another agent's, or left with its link (whose addresses in
// this agent's range make the start fail, naming both): it is left alone.

// findLeftoverTablesLocked takes the first look, when the host side is
// made; not with a fake table (a.svcNft) unless tests fake this too.
func (a *Agent) findLeftoverTablesLocked() {
	tables := a.leftoverTables()
	if tables == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), nftTimeout)
	defer cancel()
	names, err := tables.LeftOvers(ctx, a.cfg.Services.Interface)
	if err != nil {
		a.log.Warn("services: looking for tables other service interfaces left", "error", err)
	}
	a.svcLeftoverSeen = map[string]time.Time{}
	for _, name := range names {
		if !a.link().Exists(name) {
			a.svcLeftoverSeen[name] = a.deps.clock.Now()
		}
	}
}

// removeLeftoverTablesLocked takes the second look, leftoverGrace after
// the first (each Services pass calls it; nothing to do after it).
func (a *Agent) removeLeftoverTablesLocked() {
	tables := a.leftoverTables()
	if tables == nil || len(a.svcLeftoverSeen) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), nftTimeout)
	defer cancel()
	for name, seen := range a.svcLeftoverSeen {
		if a.deps.clock.Since(seen) < leftoverGrace {
			continue
		}
		delete(a.svcLeftoverSeen, name)
		if a.link().Exists(name) {
			continue // its agent made its link: not left over
		}
		has, err := tables.Has(ctx, name)
		if err == nil && has {
			err = tables.Remove(ctx, name)
		}
		if err != nil {
			a.log.Warn("services: removing the table another service interface left", "table", "ip "+name, "error", err)
		} else if has {
			a.log.Info("services: removed the table a previous --service-interface left (its link is gone)", "table", "ip "+name)
		}
	}
}

func (a *Agent) leftoverTables() leftoverTables {
	switch {
	case a.svcLeftovers != nil:
		return a.svcLeftovers
	case a.svcNft != nil:
		return nil // a fake table: no kernel to read
	}
	return kernelTables{now: a.deps.clock.Now}
}
