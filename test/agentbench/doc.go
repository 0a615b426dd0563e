// Package agentbench measures the node agent for `make bench`: from
// `berth run -d` to every container Running (and Ready, for a pod with a
// readiness probe), for one pod of four containers and for fifty
// single-container pods applied at once, on a warm image; the runtime's
// own share (the server-side time of its CRI calls, from berth's
// Prometheus metrics) is reported beside the wall time. When podman is
// installed, `podman kube play` of the same four-container pod is timed
// too.
//
// TestAgentBenchmark runs only when BERTH_AGENT_BENCH names the Markdown
// file to write; it reports and never asserts a speed.
package agentbench
