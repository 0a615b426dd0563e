package agent

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// AnnotationWatchDir is the agent's own sandbox annotation: the watched
// directory a pod came from, so that a restarted agent watches it again.
const AnnotationWatchDir = "berth.dev/watch-dir"

// orphanGrace is the grace period of a sandbox of the agent's whose pod
// cannot be read back: it is stopped and removed.
const orphanGrace = 2

// recoverPods rebuilds the desired state from the runtime: every sandbox
// labelled as the agent's carries the pod as applied and the ConfigMaps
// and Secrets it refers to. Restart counts come back from the container
// annotations; back-off starts afresh. Watched directories are watched
// again.
func (a *Agent) recoverPods(ctx context.Context) error {
	sandboxes, err := a.cfg.Runtime.ListPodSandbox(ctx, map[string]string{podspec.LabelAgent: "true"})
	if err != nil {
		return fmt.Errorf("agent: recover: list sandboxes: %w", err)
	}
	recovered := a.recoverSandboxes(sandboxes)
	a.mu.Lock()
	defer a.mu.Unlock()
	dirs := map[string]bool{}
	for _, d := range recovered {
		if d.terminating() {
			a.startWorkerLocked(d) // an orphan: removed on its first sync
			continue
		}
		if uid, taken := a.current[d.key()]; taken {
			// Two pods of one name: a replacement was under way. The
			// newer one (recovered first) stays.
			a.log.Info("recover: replacing older pod of the same name", "pod", d.key(), "older", d.pod.UID, "newer", uid)
			w := a.startWorkerLocked(d)
			a.current[d.key()] = uid
			w.beginTermination(nil, "Killing", "replaced by a newer version of the pod")
			continue
		}
		a.startWorkerLocked(d)
		if d.watchDir != "" {
			dirs[d.watchDir] = true
		}
	}
	for dir := range dirs {
		a.startWatchLocked(dir)
	}
	// Directories of pods that are gone (a termination cut short).
	keep := map[string]bool{}
	for _, d := range recovered {
		keep[string(d.pod.UID)] = true
	}
	a.teardownOrphanVolumes(ctx, keep)
	a.ready = true
	a.log.Info("agent ready", "pods", len(recovered), "watched directories", len(dirs))
	return nil
}

// quarantineReporter is a runtime that says how many of its records it set
// aside unread (CRIClient asks berth's Status).
type quarantineReporter interface {
	QuarantinedRecords(ctx context.Context) (int, error)
}

// teardownOrphanVolumes tears down the volumes of pods that are gone, unless
// the runtime quarantined records: a pod it no longer lists may then still
// run, on these volumes.
func (a *Agent) teardownOrphanVolumes(ctx context.Context, keep map[string]bool) {
	if q, ok := a.cfg.Runtime.(quarantineReporter); ok {
		n, err := q.QuarantinedRecords(ctx)
		if err != nil || n > 0 {
			a.log.Warn("recover: volumes of pods the runtime does not list are kept: it quarantined records of pods that may still run",
				"quarantined", n, "error", err)
			return
		}
	}
	if err := a.volumes.TeardownOrphans(keep); err != nil {
		a.log.Warn("recover: tear down the volumes of pods that are gone", "error", err)
	}
}

// recoverSandboxes reads the desired pods back from the newest sandbox of
// each pod uid, newest pods first; their ConfigMaps and Secrets go back
// into the store (the newest copy of each wins).
func (a *Agent) recoverSandboxes(sandboxes []*runtimeapi.PodSandbox) []desiredPod {
	sort.SliceStable(sandboxes, func(i, j int) bool {
		return sandboxes[i].GetCreatedAt() > sandboxes[j].GetCreatedAt()
	})
	var out []desiredPod
	seen := map[string]bool{}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, sb := range sandboxes {
		uid := sb.GetLabels()[podspec.LabelPodUID]
		if uid == "" || seen[uid] {
			continue
		}
		seen[uid] = true
		out = append(out, a.desiredFromSandboxLocked(sb))
	}
	return out
}

// desiredFromSandboxLocked rebuilds one pod from its sandbox's
// annotations. A sandbox whose pod cannot be read back becomes an orphan:
// a pod marked deleted, so that its worker removes it.
func (a *Agent) desiredFromSandboxLocked(sb *runtimeapi.PodSandbox) desiredPod {
	meta, err := podspec.ParseSandboxMeta(sb.GetLabels(), sb.GetAnnotations())
	if err != nil {
		a.log.Warn("recover: sandbox of the agent without a readable pod; removing it", "sandbox", sb.GetId(), "error", err)
		return orphan(sb)
	}
	for i := range meta.Sources.ConfigMaps {
		cm := meta.Sources.ConfigMaps[i]
		key := manifest.ObjectKey(cm.Namespace, cm.Name)
		if a.configMaps[key] == nil {
			a.configMaps[key] = &configMapEntry{obj: cm, source: "recovered"}
		}
	}
	for i := range meta.Sources.Secrets {
		s := meta.Sources.Secrets[i]
		key := manifest.ObjectKey(s.Namespace, s.Name)
		if a.secrets[key] == nil {
			a.secrets[key] = &secretEntry{obj: s, source: "recovered"}
		}
	}
	pod := meta.Pod
	if pod.CreationTimestamp.IsZero() {
		pod.CreationTimestamp = metav1.NewTime(fromNanos(sb.GetCreatedAt()))
	}
	return desiredPod{pod: pod, sources: meta.Sources, source: "recovered", watchDir: sb.GetAnnotations()[AnnotationWatchDir]}
}

// orphan is a deleted stand-in pod for a sandbox that cannot be read back.
func orphan(sb *runtimeapi.PodSandbox) desiredPod {
	grace := int64(orphanGrace)
	now := metav1.Now()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: sb.GetMetadata().GetName(), Namespace: sb.GetMetadata().GetNamespace(),
			UID:               types.UID(sb.GetLabels()[podspec.LabelPodUID]),
			CreationTimestamp: metav1.NewTime(fromNanos(sb.GetCreatedAt())),
			DeletionTimestamp: &now, DeletionGracePeriodSeconds: &grace,
		},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace},
	}
	return desiredPod{pod: pod, source: "orphan"}
}

// adopt takes over a pod uid the relist found without a worker: its
// sandboxes are read back as at start.
func (a *Agent) adopt(ctx context.Context, uid string) {
	sandboxes, err := a.cfg.Runtime.ListPodSandbox(ctx, map[string]string{podspec.LabelPodUID: uid, podspec.LabelAgent: "true"})
	if err != nil || len(sandboxes) == 0 {
		return
	}
	recovered := a.recoverSandboxes(sandboxes)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.workers[uid] != nil || len(recovered) == 0 {
		return
	}
	d := recovered[0]
	if other, taken := a.current[d.key()]; taken && other != uid && !d.terminating() {
		w := a.startWorkerLocked(d)
		a.current[d.key()] = other
		w.beginTermination(nil, "Killing", "another pod of the same name runs")
		return
	}
	a.log.Info("adopting a pod found in the runtime", "pod", d.key(), "uid", uid)
	a.startWorkerLocked(d)
}
