package agent

import (
	"context"
	"log/slog"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/backoff"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/probe"
	"github.com/berth-dev/berth/internal/agent/pullrecords"
	"github.com/berth-dev/berth/internal/agent/sourcestore"
	"github.com/berth-dev/berth/internal/agent/userns"
)

// volumeManager materializes pods' volumes on the host; MountSubPath
// gives a volumeMount's subPath its own mount under the pod directory;
// Teardown removes the whole pod directory (<RootDir>/pods/<uid>), those
// mounts included.
type volumeManager interface {
	Setup(ctx context.Context, pod *v1.Pod, sources podspec.Sources, downward podspec.Downward) (podspec.VolumePaths, error)
	MountSubPath(req podspec.SubPathMount) (string, error)
	Teardown(uid string) error
	TeardownOrphans(keep map[string]bool) error
}

// syncDeps is what a pod worker's sync needs, and nothing of the desired
// state (which pods exist, by which name, from which directory): the
// runtime, the host's side of a pod (volumes, the sources store, the
// agent's and the log directories, the node's facts), the probe manager,
// the back-offs, the clock and the log. The Agent builds one in New and
// shares it with every worker; a test can build one around
// criclienttest.Runtime and run a sync without an Agent.
type syncDeps struct {
	runtime      criclient.Runtime
	images       criclient.Images
	volumes      volumeManager
	sources      *sourcestore.Store // the pods' ConfigMaps and Secrets
	probes       *probe.Manager
	crashBackoff *backoff.Backoff
	pullBackoff  *backoff.Backoff
	clock        clock.WithTicker
	log          *slog.Logger
	node         node
	credentials  CredentialSource  // node-wide registry credentials; nil: none
	containerGC  ContainerGCPolicy // what each sync and the periodic collection remove
	// pullRecords are the image pull records and their verification
	// (pullverify.go); nil: none kept, present images used by any pod.
	pullRecords *pullrecords.Manager
	// userNamespaces hands out the blocks of host ids of the pods with
	// hostUsers: false (package userns); nil: such pods are refused.
	userNamespaces *userns.Manager

	runtimeName   string           // container IDs in statuses read "<name>://<id>"
	rroHandlers   map[string]bool  // runtime handlers that make recursive read-only mounts
	systemdCgroup bool             // pods' cgroup parents are systemd slices
	podCgroups    PodCgroupManager // nil: none made
	rootDir       string           // <rootDir>/pods/<uid>: the pods' agent directories
	podLogDir     string           // the root of the pods' log directories
	// clusterDNS is the cluster DNS new sandboxes get, nil while it
	// serves no Service (then pods get the host's).
	clusterDNS atomic.Pointer[podspec.ClusterDNS]
	// svcPods lets a new sandbox's addresses reach the ClusterIPs and the
	// DNS before its containers start.
	svcPods *servicePods
	// sandboxSlots bounds the sandboxes being made at once (start.go).
	sandboxSlots chan struct{}
	// statusChanged is called when a pod's status changed in what the
	// workload controllers read of it (status.go): they run at once rather
	// than at their next tick. nil: nothing is told.
	statusChanged func()
}

// PodCgroupManager makes a pod's own cgroup, sized for the pod, before its
// sandbox is made, and removes it once the pod is gone (package podcgroup).
type PodCgroupManager interface {
	Ensure(ctx context.Context, pod *v1.Pod) error
	Remove(ctx context.Context, pod *v1.Pod) error
}
