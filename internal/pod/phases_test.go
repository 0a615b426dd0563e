package pod

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type phaseRecorder struct {
	mu     sync.Mutex
	phases []string
}

func (r *phaseRecorder) ObservePhase(op, phase string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, op+"/"+phase)
}

// A host-network pod whose monitor cannot start goes through name
// reservation, namespace pinning and the monitor launch, and rolls back.
func TestRunSandboxObservesEachPhaseItReaches(t *testing.T) {
	dir := t.TempDir()
	rec := &phaseRecorder{}
	s, err := New(Config{
		RootDir: filepath.Join(dir, "root"), StateDir: filepath.Join(dir, "state"),
		MonitorPath: filepath.Join(dir, "absent-monitor"),
		Images:      noImages{}, Network: noNetwork{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Phases: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := goodSandboxConfig()
	cfg.PortMappings = nil
	cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE},
	}}
	if _, err := s.RunSandbox(context.Background(), cfg, ""); err == nil {
		t.Fatal("RunSandbox succeeded without a monitor binary")
	}
	want := []string{"run_sandbox/reserve_name", "run_sandbox/pin_namespaces", "run_sandbox/monitor"}
	if !slices.Equal(rec.phases, want) {
		t.Errorf("phases %v, want %v", rec.phases, want)
	}
	if entries, _ := os.ReadDir(s.podsDir()); len(entries) != 0 {
		t.Errorf("rollback left pod dirs: %v", entries)
	}
}

func TestPhaseWithoutObserverIsANoOp(t *testing.T) {
	s := &Service{}
	s.phase(opRunSandbox, "cni")() // must not panic
}
