// Package critest runs the CRI validation suite of sigs.k8s.io/cri-tools
// (critest v1.37, built by `make critest` from the pinned tools module)
// against a live `berth serve`, offline.
//
// critest pulls its images from registry.k8s.io, k8s.gcr.io and gcr.io. This package
// builds equivalents of them without network, from Debian's busybox (the
// dynamic build, whose applets are separate processes: the masked-paths spec
// needs that) with glibc, a few host tools the specs call (pgrep, ipcs) and
// two tiny Go programs (cmd/fakenginx, cmd/nonewprivs); pushes them into
// Debian's docker-registry on 127.0.0.1; and lets berth's hosts.toml serve
// the original names from it — registry.k8s.io and k8s.gcr.io by a server override,
// gcr.io's repositories through a `rewrite` table. critest therefore pulls
// and checks the very names it knows.
//
// skip.txt lists the specs that cannot pass offline, each with its reason;
// every other spec must pass. TestCritest skips unless BERTH_CRITEST names
// the critest binary (`make critest` sets it). BERTH_CRITEST_PROGRAMS names
// a directory of the programs built already (berth, berth-monitor,
// berth-pause, fakenginx, nonewprivs): make test-vm runs the compiled test
// in a VM without Go.
package critest
