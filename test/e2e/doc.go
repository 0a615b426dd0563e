// Package e2e runs Pod YAML through berth's node agent against each CRI
// runtime it drives (root only). Every scenario is written once, as a
// function of a node, and runs as one subtest per runtime
// (onEachRuntime), e.g. TestProbes/berth and TestProbes/containerd:
//
//   - berth: a `berth serve` of the test's own with the agent inside it
//     (test/harness: own directories, bridge and subnet);
//   - containerd: Debian's containerd 1.6 (runc v2 shim, CRI plugin) with
//     a private config, root and state under /var/lib/bt-ctrd-<id> and
//     /run/bt-ctrd-<id>, its own socket, runc state, network namespaces
//     and CNI bridge, and `berth agent --runtime-endpoint` on its socket.
//     Its images, busybox and a pause image whose entrypoint is
//     berth-pause, are imported with ctr; every pull is sent to a dead
//     loopback port, but for a test registry's (test/registry, on
//     127.0.0.1) the scenario names (plainHTTPRegistry). Its subtests skip, saying why, when containerd is
//     not installed (`make deps` installs it).
//
// TestLongRunningNode (issue 13's acceptance) runs on berth alone: its
// berth serve has its root and pod logs on a small loop-mounted ext4 of
// the test's own (harness.SmallFilesystem; skipped without loop devices).
//
// The runtime interface (runtime_test.go) is what a scenario may use of
// a runtime: the berth CLI's flags, the agent's root and socket, the CRI
// client, killing, stopping and starting the agent, its log, the network,
// a plain-HTTP loopback registry to pull from.
// Each test drives the agent with the berth CLI and the agent API, and
// its teardown deletes every CronJob, Job, Deployment and ReplicaSet (so that no
// controller makes pods again), then every pod, through the agent, then checks that
// nothing is left behind (mounts, processes, IP allocations, veths,
// iptables rules, cgroups, pod log and volume directories; for
// containerd also its shims' sockets and libcni's result files) before
// removing whatever is.
//
// The tests skip (exit 0) unless they run as root with runc in PATH and
// the CNI plugins in /usr/lib/cni. No test sends traffic off the machine:
// images are imported offline and probes reach pod IPs on the test
// bridge.
package e2e
