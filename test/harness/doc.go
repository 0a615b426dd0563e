// Package harness runs a private `berth serve` for root tests: its own
// root, state and CNI directories, bridge and subnet (random names), an
// offline registry config, and the checks that nothing is left behind
// afterwards (mounts, processes, runc containers, IP allocations, veths,
// iptables rules, cgroups), followed by a forced cleanup so that a failing
// test never leaves debris on the host. A daemon built with
// BERTH_TEST_RACE=1 (BuildBinaries) fails the test when it reports a data
// race.
//
// PrivateSystemd boots a systemd of a test's own (PID 1 of new PID, mount,
// cgroup and UTS namespaces, a private /run, its own cgroup subtree) and
// runs `berth serve` inside it (Options.Wrap, Options.StateParent), for the
// systemd cgroup driver on hosts whose PID 1 is not systemd; it is killed
// by PID and its cgroups removed after the test.
//
// SmallFilesystem makes an ext4 of a few hundred MiB on a loop device of
// the test's own, mounted on a temporary directory (unmounted, detached
// and removed at cleanup, whatever the outcome; skipped without loop
// devices); Options.RootParent puts a daemon's root on it, so that a test
// fills a real disk rather than moving thresholds.
//
// Process is the child-process type of every daemon a root test runs
// (berth serve here, containerd and `berth agent` in test/e2e, the
// Kubernetes components in test/kube): a log file kept across restarts,
// its own process group, SIGKILL when the test dies, Stop with SIGTERM
// then SIGKILL.
//
// test/integration, test/e2e and test/agentbench run their daemons with
// it; test/e2e's containerd runtime, which runs containerd and the agent
// its own way, uses its Network and the host checks of host.go
// (MountsUnder, ProcessTree, BerthCgroups, …).
package harness
