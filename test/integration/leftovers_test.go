package integration

import (
	"strings"
	"testing"
)

// TestLeftoverChecksSeeARunningPod proves that each leftover check can fail:
// while a pod runs, every kind of resource it holds must be reported.
func TestLeftoverChecksSeeARunningPod(t *testing.T) {
	d := startDaemon(t)
	podCfg := podConfig(t, "held")
	podID := d.runPod(podCfg)
	d.run(podID, podCfg, containerConfig("sleeper", "sleep", "1000"))
	d.CollectIDs()
	found := strings.Join(d.Leftovers(), "\n")
	for _, kind := range []string{"mount ", "process ", "runc container ", "host-local allocation ", "link on bridge ", "iptables ", "cgroup "} {
		if !strings.Contains(found, kind) {
			t.Errorf("leftover checks miss a running pod's %q; they report:\n%s", strings.TrimSpace(kind), found)
		}
	}
	if !strings.Contains(found, "berth-monitor") || !strings.Contains(found, "berth-pause") || !strings.Contains(found, "sleep 1000") {
		t.Errorf("process check misses the monitor, berth-pause or the container:\n%s", found)
	}
}
