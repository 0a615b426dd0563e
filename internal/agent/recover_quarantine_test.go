package agent

import (
	"testing"

	"github.com/berth-dev/berth/internal/agent/criclient/criclienttest"
)

// A pod whose sandbox record the runtime quarantined is not listed, yet may
// still run on its volumes: the agent's start then keeps every volume.
func TestRecoveryKeepsOrphanVolumesWhileRecordsAreQuarantined(t *testing.T) {
	for quarantined, wantSweeps := range map[int]int{0: 1, 2: 0} {
		rt := criclienttest.New()
		rt.SetQuarantined(quarantined)
		a := startTestAgent(t, rt)
		if got := a.volumes.orphanSweeps(); got != wantSweeps {
			t.Errorf("%d quarantined records: %d sweeps of orphan volumes, want %d", quarantined, got, wantSweeps)
		}
		a.stop()
	}
}
