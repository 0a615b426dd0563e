// Builds the runc berth runs by default (make runc-bin): the runc module's
// main package at its published release, cgo with Debian's libseccomp-dev.
module github.com/berth-dev/berth/tools/runc

go 1.26.0

require github.com/opencontainers/runc v1.5.3
