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
	Remove(ctx context.Context, name string) error
}

type kernelTables struct{ now func() time.Time }

func (kernelTables) LeftOvers(ctx context.Context, own string) ([]string, error) {
	return svcnft.LeftOvers(ctx, own)
}

func (k kernelTables) Remove(ctx context.Context, name string) error {
	t, err := svcnft.New(name, k.now)
	if err != nil {
		return err
	}
	return t.Remove(ctx)
}

// removeLeftoverTablesLocked removes the Services tables an agent run with
// another --service-interface left: an ip table whose objects are exactly
// a Services table's (svcnft.LeftOvers) and whose service link is gone.
// While an agent has Services it has its link (it programs the table a
// moment before adding the link at its first pass); a table without one
// serves no agent, and its DNAT map would send a ClusterIP this agent
// reuses to a dead port. A table whose link exists is another agent's,
// or left with its link (whose addresses in this agent's range make the
// start fail, naming both): it is left alone. Run when the host side is
// made; not with a fake table (a.svcNft) unless tests fake this too.
func (a *Agent) removeLeftoverTablesLocked() {
	tables := a.svcLeftovers
	if tables == nil {
		if a.svcNft != nil {
			return // a fake table: no kernel to read
		}
		tables = kernelTables{now: a.deps.clock.Now}
	}
	ctx, cancel := context.WithTimeout(context.Background(), nftTimeout)
	defer cancel()
	names, err := tables.LeftOvers(ctx, a.cfg.Services.Interface)
	if err != nil {
		a.log.Warn("services: looking for tables other service interfaces left", "error", err)
	}
	for _, name := range names {
		if a.link().Exists(name) {
			a.log.Info("services: another service interface's table is left alone: its link exists", "table", "ip "+name)
			continue
		}
		if err := tables.Remove(ctx, name); err != nil {
			a.log.Warn("services: removing the table another service interface left", "table", "ip "+name, "error", err)
			continue
		}
		a.log.Info("services: removed the table a previous --service-interface left (its link is gone)", "table", "ip "+name)
	}
}
