// Builds etcd 3.6 (make etcd-bin): the server module's main package at its
// published version, with its sibling modules at the same version.
module github.com/berth-dev/berth/tools/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v3.6.16
