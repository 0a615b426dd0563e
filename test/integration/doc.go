// Package integration holds root-only tests that run a live `berth serve`
// and drive it over its CRI v1 socket, the way kubelet does.
//
// Rules: every test starts its own daemon (test/harness) with its own
// root, state and CNI directories, bridge and subnet (random names), so
// tests never share state with each other or with a berth installed on the
// machine. After each test the harness removes every sandbox through CRI,
// stops the daemon, asserts that nothing is left behind (mounts, processes,
// runc containers, IP allocations, veths, iptables rules, cgroups) and then
// force-removes anything that is, so a failing test never leaves debris on
// the host. With BERTH_TEST_RACE=1 the daemon is built with the race
// detector and a test whose daemon reports a race fails.
//
// The tests skip (exit 0) unless they run as root with runc in PATH and the
// CNI plugins in /usr/lib/cni. TestSystemdCgroupDriver runs its daemon
// under a systemd of its own (harness.PrivateSystemd) and skips, saying
// why, where that cannot start (no systemd, a cgroup v2 only host).
package integration
