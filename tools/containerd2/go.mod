// Builds containerd 2.4 (make containerd2-bin): the daemon, its runc v2 shim
// and ctr from the containerd module at its published release, for the
// bench's side by side (test/bench runs it on a root, state and socket of
// its own).
module github.com/berth-dev/berth/tools/containerd2

go 1.26.6

require github.com/containerd/containerd/v2 v2.4.2
