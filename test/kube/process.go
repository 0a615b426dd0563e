package kube

import "github.com/berth-dev/berth/test/harness"

// Process is one component the test runs as its child (harness.Process:
// its own process group, a log file kept across restarts, SIGKILL when the
// test dies).
type Process = harness.Process
