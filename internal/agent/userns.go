package agent

import (
	"fmt"
	"log/slog"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/userns"
)

// openUserNamespaces reads the pods' user namespace allocations back from
// <RootDir>/userns (package userns): a range or a record it cannot use
// stops the agent, as it stops kubelet.
func openUserNamespaces(cfg Config, log *slog.Logger) (*userns.Manager, error) {
	m, err := userns.Open(userns.Options{
		Dir:        filepath.Join(cfg.RootDir, "userns"),
		SubUIDFile: cfg.SubUIDFile, SubGIDFile: cfg.SubGIDFile,
		MaxPods:  cfg.MaxPods,
		Handlers: cfg.UserNamespaceHandlers,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	log.Debug("user namespaces", "range", m.Range().String())
	return m, nil
}

// userNamespace is the pod's CRI user namespace (Mode NODE, or its own
// block for hostUsers: false, allocated and recorded before its sandbox
// is made).
func (w *podWorker) userNamespace(d desiredPod) (*runtimeapi.UserNamespace, error) {
	return w.deps.userNamespaces.PodUserNamespace(d.pod, runtimeHandler(d.pod))
}

// freeOrphanUserNamespaces frees, at recovery, the blocks of pods that are
// gone (kubelet's CleanupOrphanedPodUsernsAllocations); keep holds the
// uids of the pods the agent still has.
func (a *Agent) freeOrphanUserNamespaces(keep map[string]bool) {
	freed, err := a.deps.userNamespaces.CleanupOrphans(keep)
	if len(freed) > 0 {
		a.log.Info("recover: freed the user namespaces of pods that are gone", "pods", freed)
	}
	if err != nil {
		a.log.Warn("recover: free the user namespaces of pods that are gone", "error", err)
	}
}
