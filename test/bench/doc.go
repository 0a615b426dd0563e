// Command bench measures berth against its floors on this machine and prints
// a Markdown report (also written to the -o file):
//
//   - CRI latencies over the unix socket, serially, N runs after one
//     discarded warm-up: RunPodSandbox (pid namespace CONTAINER, and POD with
//     berth-pause), CreateContainer, StartContainer, StopPodSandbox,
//     RemovePodSandbox;
//   - floors: CNI ADD alone through internal/network with the daemon's own
//     conflist, namespace pinning, a monitor launch, `runc run` of true and
//     `runc create` + `runc start` of sleep on the image's unpacked layer;
//   - memory: PSS/RSS from /proc/<pid>/smaps_rollup of berth-monitor,
//     berth-pause and `berth serve`;
//   - image pull (pull*.go; -pull=false skips it): CRI PullImage of a ~190 MB,
//     8-layer image from a local docker-registry (test/registry) into a cold
//     store, against the floor `skopeo copy` to a dir + `tar -xzf` of every
//     layer; seconds, MB/s and the ratio (goal ≤ 1.3×);
//   - containerd 1.6 reference numbers and berth's goals;
//   - runtimes side by side (runtimes*.go, ctrd.go; -runtimes=false skips
//     it): the same cycle through the same client code on berth with the
//     pinned runc (bin/berth-runc, the default handler), on the same daemon
//     with the system's runc (handler runc-system) and on a private
//     containerd 1.6 (test/harness.Containerd, the system's runc, the same
//     CNI plugins on a bridge of its own), taking turns cycle by cycle.
//
// Rules: it is a report, never an assertion; it needs root. Everything it
// creates is named after one random id (dirs /var/lib/bb-<id> and
// /run/bb-<id>, bridge bb<id>, a free 10.a.b.0/24 subnet) so it can run
// beside other people's tests (containerd: dirs <root>/ctrd and <state>/ctrd,
// bridge bc<id>), and it removes all of it on success, failure and
// SIGINT/SIGTERM: pods through CRI, then containerd and the daemon
// (SIGTERM), whatever containerd left (shims, mounts, links, iptables rules,
// cgroups, CNI cache files, shim sockets: reported as leftovers), the
// floors' runc containers, the bridges and the directories. It only signals
// processes it started, by pid.
package main
