// Package harness runs a private `berth serve` for root tests: its own
// root, state and CNI directories, bridge and subnet (random names), an
// offline registry config, and the checks that nothing is left behind
// afterwards (mounts, processes, runc containers, IP allocations, veths,
// iptables rules, cgroups), followed by a forced cleanup so that a failing
// test never leaves debris on the host.
//
// test/e2e uses it; it follows the harness of test/integration (which
// keeps its own copy for now).
package harness
