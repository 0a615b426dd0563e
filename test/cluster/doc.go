// Package cluster runs a one-node Kubernetes cluster whose only runtime is
// a berth serve of its own, and drives it with kubectl as a user would
// (test/kube starts etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and a kubelet registered as node "localhost", all on
// 127.0.0.1): a Deployment rolls and scales, a Job completes, init
// containers, sidecars, probes and hooks behave, kubectl logs, exec,
// attach, port-forward and cp work, kubelet's summary API has berth's
// stats (also with PodAndContainerStatsFromCRI), kubelet's log rotation
// loses no line. With BERTH_CONFORMANCE_DEPS set it then runs Kubernetes'
// [NodeConformance] specs in the same cluster (package conformance). At the
// end every workload is deleted and kubelet must leave nothing in berth;
// the harness then checks the host.
//
// The tests skip unless BERTH_KUBE_BIN names the Kubernetes binaries and
// BERTH_ETCD an etcd: `make test-cluster KUBE_VERSION=1.37` (or 1.34)
// builds them and sets both; BERTH_KUBELET, when set, is the kubelet (1.34's
// under 1.37's control plane); docs/kubernetes.md says what runs and how.
package cluster
