// Package kube runs upstream Kubernetes components for berth's root tests:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kubelet, built from the module proxy (`make kube-bin etcd-bin`), each a
// child process of the test with its own directories under the test's
// temporary directory and its log in a file there.
//
// Everything listens on 127.0.0.1 only. The node registers as
// "localhost", so the API server, which reaches a kubelet by its Hostname
// address (--kubelet-preferred-address-types), connects to 127.0.0.1, and
// kubelet's server binds there; no test sends traffic to the machine's
// other addresses. A private certificate authority (pki.go) signs every
// serving and client certificate; the API server authorizes with Node and
// RBAC as a real cluster does.
//
// What a kubelet changes on the host is put back when the test ends
// (host.go): the processes the test started are stopped by pid, kubelet's
// kubepods cgroups are removed from every hierarchy, its links in
// /var/log/containers go, the kernel settings it tunes are restored and
// the bind mount of its root directory is undone. KubeletOptions.Wrap runs
// kubelet through a command, e.g. inside a private systemd
// (harness.PrivateSystemd) for cgroupDriver: systemd. test/kubelet runs a
// standalone kubelet with it, test/cluster a registered one.
package kube
