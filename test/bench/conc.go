package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/test/harness"
)

// memEarlyPods is the number of pods up at the concurrency section's
// first memory reading (the second is with every pod of the phase up).
const memEarlyPods = 20

// concResults are the concurrency section's runtimes and settings.
type concResults struct {
	pods                  int     // pods started per phase
	ks                    intList // pods in flight, one phase each
	rows                  []*concRuntime
	loadBefore, loadAfter string
	// profiles are berth serve's mutex and block profiles over its phase
	// with the most in flight.
	profiles *daemonProfiles
}

// concRuntime is one runtime of the concurrency section: one CRI client
// (one gRPC connection, kept for the whole section), how to find its
// per-pod processes and its daemon, and its phases.
type concRuntime struct {
	name      string // in the report
	tag       string // in pod names
	version   string // CRI Version: runtime name and version
	cni       string // its CNI network: name, bridge, subnet
	client    criClient
	daemonPid func() int
	procs     podProcSelector
	skipped   string       // why it was not (or no longer) measured
	phases    []*concPhase // in the order of the section's ks
}

// measureConcurrency starts ONE long-lived client per runtime (berth with
// the pinned runc, containerd 1.6, containerd 2.4) and runs, for each K
// of -conc, a phase per runtime in turns (berth K=1, containerd 1.6 K=1,
// containerd 2.4 K=1, berth K=10, ...): N pods started with K in flight,
// then stopped and removed with K in flight. A runtime that is missing,
// fails to start or fails a phase is reported with the reason and left
// out of the phases after; the others go on. Both containerds are stopped
// and their leftovers checked at the end.
func (b *bench) measureConcurrency(ctx context.Context) error {
	r := &b.res.conc
	r.pods, r.ks, r.loadBefore = b.o.concPods, b.o.conc, loadAverage()
	berth := &concRuntime{
		name: "berth", tag: "b", client: b.d.criClient, daemonPid: b.d.pid,
		cni:   cniName(b.e.netName, b.e.bridge, b.e.subnet.String(), b.e.cniDescription()),
		procs: podProcSelector{holderComm: "berth-monitor", holderArg: b.e.state + "/", helperComms: []string{"berth-pause"}},
	}
	c16, row16 := b.startConcContainerd(harness.Containerd16, "16", "bk")
	flavour2 := harness.Containerd2("containerd 2.4", b.o.containerd2)
	c24, row24 := b.startConcContainerd(flavour2, "24", "bn")
	r.rows = []*concRuntime{berth, row16, row24}
	for _, row := range r.rows {
		if row.skipped == "" {
			row.version = criVersion(ctx, row.client)
		}
	}
	err := b.concPhasesInTurns(ctx, r)
	for _, c := range []*benchContainerd{c16, c24} {
		if c != nil {
			if serr := b.stopContainerd(c); serr != nil && err == nil {
				err = serr
			}
		}
	}
	r.loadAfter = loadAverage()
	return err
}

// concPhasesInTurns runs the phases, K by K, runtime by runtime.
func (b *bench) concPhasesInTurns(ctx context.Context, r *concResults) error {
	for _, k := range r.ks {
		for _, row := range r.rows {
			if row.skipped != "" {
				continue
			}
			progressf("concurrency: %s, %d pods, %d in flight", row.name, r.pods, k)
			prof := b.profilesFor(r, row, k)
			ph, err := row.runPhase(ctx, k, r.pods)
			if prof != nil {
				prof.after(ctx)
			}
			row.phases = append(row.phases, ph)
			if err != nil {
				ph.failed = firstLine(err.Error())
				row.skipped = fmt.Sprintf("the phase with %d in flight failed: %v", k, firstLine(err.Error()))
				warnf("concurrency: %s: %v", row.name, err)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

// profilesFor starts reading berth's profiles when row is berth and k
// the section's largest K; nil otherwise.
func (b *bench) profilesFor(r *concResults, row *concRuntime, k int) *daemonProfiles {
	if row.client.endpoint != b.d.endpoint || k != slices.Max(r.ks) {
		return nil
	}
	dir := filepath.Join(b.e.work, "profiles")
	if b.o.out != "" {
		dir = filepath.Join(filepath.Dir(b.o.out), "profiles") // kept beside the report
	}
	r.profiles = &daemonProfiles{socket: b.e.pprofSocket(), dir: dir,
		label: fmt.Sprintf("%d pods, %d in flight (starts and teardown)", r.pods, k)}
	r.profiles.before(context.Background())
	return r.profiles
}

// startConcContainerd starts a containerd of flavour f for the section
// (directories cc<ver>, network <prefix><id>) and returns it with its
// row; a flavour that is missing or fails to start gives a nil
// containerd (stopped and cleaned up) and a row that says why.
func (b *bench) startConcContainerd(f harness.ContainerdFlavour, ver, prefix string) (*benchContainerd, *concRuntime) {
	row := &concRuntime{name: f.Name, tag: "c" + ver}
	if row.skipped = f.Missing(); row.skipped != "" {
		if f.ShimDir != "" {
			row.skipped += " (make containerd2-bin builds it)"
		}
		return nil, row
	}
	c := newBenchContainerd(b.e, f, "cc"+ver, prefix, b.concSubnets()...)
	b.ctrds = append(b.ctrds, c)
	if err := c.start(b.busyboxRef); err != nil {
		row.skipped = "it did not start: " + firstLine(err.Error())
		warnf("%s: %v", f.Name, err)
		if serr := b.stopContainerd(c); serr != nil {
			warnf("%s: %v", f.Name, serr)
		}
		return nil, row
	}
	row.client, row.daemonPid = c.client(), c.Pid
	row.cni = cniName(c.net.Name, c.net.Bridge, c.net.Subnet.String(), "written by the bench with berth's internal/network.InstallDefault")
	row.procs = podProcSelector{holderComm: "containerd-shim", holderArg: c.Socket, helperComms: []string{"pause"}}
	return c, row
}

// concSubnets are the subnets of the containerds running now.
func (b *bench) concSubnets() []*net.IPNet {
	var out []*net.IPNet
	for _, c := range b.ctrds {
		out = append(out, c.net.Subnet)
	}
	return out
}

// criVersion is the endpoint's CRI Version: runtime name and version, or
// "" when it does not answer.
func criVersion(ctx context.Context, c criClient) string {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	v, err := c.rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return ""
	}
	return v.GetRuntimeName() + " " + v.GetRuntimeVersion()
}

// cniName describes a runtime's CNI network for the report.
func cniName(name, bridge, subnet, how string) string {
	return fmt.Sprintf("`%s` (bridge %s, %s; %s)", name, bridge, subnet, how)
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// containerd2Dir is the default -containerd2: where make containerd2-bin
// puts containerd 2.4's binaries.
var containerd2Dir = filepath.Join("bin", "containerd2")

// onlyConcurrency is the -only value that runs the concurrency section
// alone.
const onlyConcurrency = "concurrency"

// intList is a flag of comma-separated positive integers.
type intList []int

// String joins the values with commas.
func (l *intList) String() string {
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// Set parses "1,10,50".
func (l *intList) Set(s string) error {
	var out intList
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || v < 1 {
			return fmt.Errorf("%q: want positive integers separated by commas", s)
		}
		out = append(out, v)
	}
	*l = out
	return nil
}
