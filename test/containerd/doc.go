// Package containerd checks that berth's node agent works unchanged
// against containerd: a root-only test starts a containerd of its own
// (Debian's containerd 1.6, the runc v2 shim, the CRI plugin), points
// `berth agent --runtime-endpoint` at its socket and drives pods through
// the berth CLI, asserting kubelet behaviour — init containers, emptyDir
// and configMap volumes, $(VAR) expansion, exec readiness probes, logs,
// exec, crash back-off, deletion and recovery after an agent restart.
//
// The package owns everything that containerd needs to run privately and
// offline: its config (root and state under /var/lib/bt-ctrd-<id> and
// /run/bt-ctrd-<id>, its own socket, runc state, network namespaces under
// its state dir, a CNI conflist with a random bridge and 10.x subnet, a
// registry config that sends every pull to a dead loopback port), the
// images it needs (a pause image whose entrypoint is berth-pause, and the
// busybox test image, both built here and imported with ctr), and the
// cleanup: pods, processes (containerd, its shims and their containers,
// found by the shims' -address argument), mounts, the bridge, iptables
// rules, cgroups, CNI result files and directories, with a check that
// nothing was left behind before the forced removal.
//
// The test skips unless it runs as root with /usr/bin/containerd (Debian
// package containerd), runc and the CNI plugins installed. No traffic
// leaves the machine: images are imported, probes and exec stay local.
package containerd
