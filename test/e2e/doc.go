// Package e2e runs Pod YAML through the node agent against a real
// `berth serve` (root only): each test starts its own daemon with the agent
// enabled, fast back-off and relist settings, its own directories, bridge
// and subnet (test/harness), drives it with the berth CLI and the agent
// API, and checks after the pods are deleted that nothing is left behind.
//
// The tests skip (exit 0) unless they run as root with runc in PATH and the
// CNI plugins in /usr/lib/cni. No test sends traffic off the machine: the
// image is imported offline and probes reach pod IPs on the test bridge.
package e2e
