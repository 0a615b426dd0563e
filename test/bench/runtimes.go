package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/test/harness"
)

// runtimeRow is one runtime of the side-by-side comparison: a CRI
// endpoint and runtime handler, and its cycles.
type runtimeRow struct {
	name     string // in the report
	tag      string // in pod names
	endpoint string
	handler  string // "" is the endpoint's default
	version  string // CRI Version: runtime name and version
	runc     string // the runc it runs, and that runc's --version
	client   criClient
	l        latencies
}

// runtimeResults are the runtimes measured side by side.
type runtimeResults struct {
	rows []*runtimeRow
	// noContainerd says why containerd was left out, or "".
	noContainerd string
}

// measureRuntimes runs the whole pod cycle (pid CONTAINER, kubelet's
// default) on berth with the pinned runc, on berth with the system's
// runc (handler runc-system: the same daemon and client), and on a private
// containerd 1.6 driven by the same client code. The runtimes take turns
// cycle by cycle, so that the machine's other work falls on all of them;
// each discards its first cycle. containerd is stopped and its leftovers
// checked before the next phase.
func (b *bench) measureRuntimes(ctx context.Context) error {
	r := &b.res.runtimes
	r.rows = []*runtimeRow{
		{name: "berth, pinned runc", tag: "pinned", client: b.d.criClient, runc: b.e.pinnedRunc()},
		{name: "berth, system runc", tag: "system", client: b.d.withHandler(config.SystemRuncHandler), runc: systemRunc},
	}
	var ctrd *benchContainerd
	if r.noContainerd = harness.Containerd16.Missing(); r.noContainerd == "" {
		ctrd = newBenchContainerd(b.e, harness.Containerd16, "ctrd", "bc")
		b.ctrds = append(b.ctrds, ctrd)
		if err := ctrd.start(b.busyboxRef); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
		r.rows = append(r.rows, &runtimeRow{name: "containerd 1.6", tag: "ctrd", client: ctrd.client(), runc: systemRunc})
	}
	for _, row := range r.rows {
		row.describe(ctx)
	}
	if err := cycleInTurns(ctx, r.rows, b.o.runs); err != nil {
		return err
	}
	if ctrd != nil {
		return b.stopContainerd(ctrd)
	}
	return nil
}

// describe fills the row's endpoint, handler, CRI version and runc
// version.
func (row *runtimeRow) describe(ctx context.Context) {
	row.endpoint, row.handler = row.client.endpoint, row.client.handler
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	if v, err := row.client.rt.Version(ctx, &runtimeapi.VersionRequest{}); err == nil {
		row.version = v.GetRuntimeName() + " " + v.GetRuntimeVersion()
	}
	if out, err := exec.Command(row.runc, "--version").Output(); err == nil {
		row.runc += " (" + strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0] + ")"
	}
}

// cycleInTurns runs 1 + n cycles on each runtime, one runtime after the
// other within each round, and keeps all but each runtime's first.
func cycleInTurns(ctx context.Context, rows []*runtimeRow, n int) error {
	for i := 0; i <= n; i++ {
		for _, row := range rows {
			t, err := row.client.cycle(ctx, fmt.Sprintf("rt-%s-%d", row.tag, i), runtimeapi.NamespaceMode_CONTAINER)
			if err != nil {
				return fmt.Errorf("%s: %w", row.name, err)
			}
			if i > 0 {
				row.l.cycles = append(row.l.cycles, t)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}
