package criserver

import "github.com/berth-dev/berth/internal/pod"

// The values of a pod's network interfaces: pod-level metrics, as kubelet
// and CRI-O report them, for the containers share the pod's namespace.

// network gives one value per interface of the pod but its loopback.
func network(f func(*pod.InterfaceCounters) uint64) func(*pod.SandboxStats) []point {
	return func(st *pod.SandboxStats) []point {
		out := make([]point, 0, len(st.Interfaces))
		for i := range st.Interfaces {
			c := &st.Interfaces[i]
			if c.Name == "lo" {
				continue
			}
			out = append(out, point{labels: []string{c.Name}, value: f(c)})
		}
		return out
	}
}

func rxBytes(c *pod.InterfaceCounters) uint64   { return c.RxBytes }
func rxPackets(c *pod.InterfaceCounters) uint64 { return c.RxPackets }
func rxDropped(c *pod.InterfaceCounters) uint64 { return c.RxDropped }
func rxErrors(c *pod.InterfaceCounters) uint64  { return c.RxErrors }
func txBytes(c *pod.InterfaceCounters) uint64   { return c.TxBytes }
func txPackets(c *pod.InterfaceCounters) uint64 { return c.TxPackets }
func txDropped(c *pod.InterfaceCounters) uint64 { return c.TxDropped }
func txErrors(c *pod.InterfaceCounters) uint64  { return c.TxErrors }
