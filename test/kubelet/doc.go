// Package kubelet runs an upstream kubelet in standalone mode (static
// pods, no API server) against a berth serve of its own, and checks through
// CRI that berth does what kubelet asks: an init container then two
// containers run, an exiting container is restarted, a restarted kubelet
// adopts the running pods, a removed static pod leaves nothing in berth.
// TestStandaloneKubeletSystemd does the same with cgroupDriver: systemd,
// kubelet and berth serve (cgroup_driver = "systemd") both inside a
// systemd of the test's own (harness.PrivateSystemd; skipped where it
// cannot run), and checks that the containers are scopes in the pod slices
// kubelet made through that systemd and that the pod slices go with the
// pods.
//
// The tests skip unless BERTH_KUBELET names a kubelet binary (`make
// test-kubelet KUBE_VERSION=1.37` builds one and sets it).
// BERTH_KUBELET_LOG=FILE keeps a copy of kubelet's log,
// BERTH_KUBELET_FEATURE_GATES (e.g. CRIListStreaming=true) is passed to
// --feature-gates; the test logs kubelet's lines about CRI calls berth
// does not implement.
//
// Everything kubelet changes on the host is put back: the test stops the
// kubelet it started by pid, removes the kubepods cgroups it made in every
// hierarchy and the /var/log/containers links, and restores the kernel
// settings kubelet tunes (vm.overcommit_memory, kernel.panic, …); under
// the private systemd, kubelet's slices, processes and mounts end with
// that systemd. All traffic stays on loopback: kubelet's server is off and
// its healthz endpoint listens on 127.0.0.1.
package kubelet
