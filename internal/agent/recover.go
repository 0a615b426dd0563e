package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/errdefs"
)

// AnnotationWatchDir is the agent's own sandbox annotation: the watched
// directory a pod came from, so that a restarted agent watches it again.
const AnnotationWatchDir = "berth.dev/watch-dir"

// orphanGrace is the grace period of a sandbox of the agent's whose pod
// cannot be read back: it is stopped and removed.
const orphanGrace = 2

// recoverPods rebuilds the desired state from the runtime and the source
// store: every sandbox labelled as the agent's carries the pod as applied
// and refs to the ConfigMaps and Secrets it refers to, which the store
// holds; the store's records of pods that are gone are removed. Restart
// counts come back from the container annotations; back-off starts
// afresh. Watched directories are watched again if they still pass
// manifest.CheckTrustedDir.
func (a *Agent) recoverPods(ctx context.Context) error {
	sandboxes, err := a.deps.runtime.ListPodSandbox(ctx, map[string]string{podspec.LabelAgent: "true"})
	if err != nil {
		return fmt.Errorf("agent: recover: list sandboxes: %w", err)
	}
	recovered := a.recoverSandboxes(sandboxes)
	observed := a.observeAll(ctx, recovered)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadServicesLocked() // before the workers: a sandbox they make gets the cluster DNS
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
		w := a.startWorkerLocked(d)
		if obs, ok := observed[string(d.pod.UID)]; ok {
			w.adoptStatus(d, obs)
		}
		if len(d.sourcesMissing) > 0 {
			w.record(agentapi.EventWarning, "SourcesNotFound", "", "The agent's store lacks "+strings.Join(d.sourcesMissing, ", ")+
				": the pod is left as it is until its manifests are applied again")
		}
		if d.watchDir != "" {
			dirs[d.watchDir] = true
		}
	}
	// Directories of pods that are gone (a termination cut short).
	keep := map[string]bool{}
	for _, d := range recovered {
		keep[string(d.pod.UID)] = true
		a.claims.adopt(d.pod) // its claims stay its own (ReadWriteOncePod) before it syncs again
	}
	a.loadWorkloadsLocked()
	for uid := range a.workloads {
		keep[uid] = true // the sources their templates refer to
	}
	a.teardownOrphans(ctx, keep)
	a.watchAgainLocked(dirs)
	a.deps.svcPods.workersRecovered() // the pods set is the workers' again
	a.syncServicesLocked()            // the recovered pods as endpoints
	a.ready = true
	a.log.Info("agent ready", "pods", len(recovered), "watched directories", len(dirs))
	return nil
}

// watchAgainLocked watches again the directories recovered pods came
// from, and those the workloads, Services and claims came from (a
// directory whose pods are all gone may hold a Deployment), if they still
// pass manifest.CheckTrustedDir.
func (a *Agent) watchAgainLocked(dirs map[string]bool) {
	a.objectDirsLocked(dirs)
	for dir := range dirs {
		if err := manifest.CheckTrustedDir(dir); err != nil {
			a.log.Warn("recover: watched directory refused: not watched again; what came from it is left as it is", "dir", dir, "error", err)
			continue
		}
		a.startWatchLocked(dir)
	}
}

// quarantineReporter is a runtime that says how many of its records it set
// aside unread (CRIClient asks berth's Status).
type quarantineReporter interface {
	QuarantinedRecords(ctx context.Context) (int, error)
}

// teardownOrphans tears down the volumes, removes the stored sources and
// frees the user namespaces of pods that are gone, unless the runtime
// quarantined records: a pod it no longer lists may then still run, on
// these volumes and host ids.
func (a *Agent) teardownOrphans(ctx context.Context, keep map[string]bool) {
	if q, ok := a.deps.runtime.(quarantineReporter); ok {
		n, err := q.QuarantinedRecords(ctx)
		if err != nil || n > 0 {
			a.log.Warn("recover: volumes and sources of pods the runtime does not list are kept: it quarantined records of pods that may still run",
				"quarantined", n, "error", err)
			return
		}
	}
	if err := a.deps.volumes.TeardownOrphans(keep); err != nil {
		a.log.Warn("recover: tear down the volumes of pods that are gone", "error", err)
	}
	if err := a.deps.sources.RemoveExcept(keep); err != nil {
		a.log.Warn("recover: remove the sources of pods that are gone", "error", err)
	}
	a.freeOrphanUserNamespaces(keep)
}

// observeAll observes each recovered pod in the runtime, so that the API
// shows it as it runs from the moment the agent is ready: its worker's
// first sync computes a status only after setting its volumes up again
// (5 MB of ConfigMaps take a while), and until then `berth exec` would
// find nothing running. A pod that cannot be observed waits for that sync.
func (a *Agent) observeAll(ctx context.Context, recovered []desiredPod) map[string]observation {
	out := map[string]observation{}
	for _, d := range recovered {
		if d.terminating() {
			continue
		}
		obs, err := a.deps.observe(ctx, string(d.pod.UID))
		if err != nil {
			a.log.Debug("recover: observe", "pod", d.key(), "error", err)
			continue
		}
		out[string(d.pod.UID)] = obs
	}
	return out
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
	sources, missing := a.recoverSources(meta)
	a.adoptSourcesLocked(sources)
	pod := meta.Pod
	saved, err := loadEphemeral(a.deps.podDir(meta.UID), meta.UID)
	if err != nil {
		a.log.Warn("recover: the pod's ephemeral containers cannot be read back; they are not run again", "pod", meta.Namespace+"/"+meta.Name, "error", err)
	}
	mergeEphemeral(pod, saved)
	if pod.CreationTimestamp.IsZero() {
		pod.CreationTimestamp = metav1.NewTime(fromNanos(sb.GetCreatedAt()))
	}
	ips, err := a.deps.sources.PodIPs(meta.UID)
	if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		a.log.Warn("recover: the pod's kept IPs are unreadable; its status shows only what the runtime holds", "pod", meta.Namespace+"/"+meta.Name, "error", err)
	}
	return desiredPod{
		pod: pod, sources: sources, sourcesMissing: missing, podIPs: ips,
		source: "recovered", watchDir: sb.GetAnnotations()[AnnotationWatchDir],
	}
}

// recoverSources reads a pod's ConfigMaps and Secrets back from the
// agent's store and checks them against the refs its sandbox carries. A
// sandbox made by an older agent carries the sources themselves. What the
// store lacks is reported and returned as missing: the pod is then left
// as it is (nothing is removed) until its manifests are applied again.
func (a *Agent) recoverSources(meta podspec.SandboxMeta) (podspec.Sources, []string) {
	pod := meta.Namespace + "/" + meta.Name
	held, err := a.deps.sources.Load(meta.UID)
	switch {
	case err != nil && !meta.LegacySources.Empty():
		a.log.Info("recover: sources read from the sandbox (made by an older agent); kept in the agent's store from now on", "pod", pod)
		return meta.LegacySources, nil
	case err != nil && meta.SourceRefs.Empty():
		return podspec.Sources{}, nil
	case err != nil:
		missing := refNames(meta.SourceRefs)
		a.log.Warn("recover: the agent's store lacks the pod's sources; the pod is left as it is until its manifests are applied again",
			"pod", pod, "sources", missing, "error", err)
		return podspec.Sources{}, missing
	}
	diff, err := a.deps.sources.Compare(meta.SourceRefs, held)
	if err != nil {
		a.log.Warn("recover: cannot check the pod's sources", "pod", pod, "error", err)
	}
	if len(diff.Changed) > 0 {
		a.log.Info("recover: sources changed since the pod's sandbox was made; the store's newer copy is used", "pod", pod, "sources", diff.Changed)
	}
	if len(diff.Missing) > 0 {
		a.log.Warn("recover: the agent's store lacks some of the pod's sources; the pod is left as it is until its manifests are applied again",
			"pod", pod, "sources", diff.Missing)
	}
	return held, diff.Missing
}

// refNames names every source of refs ("ConfigMap cfg").
func refNames(refs podspec.SourceRefs) []string {
	var names []string
	for _, r := range refs.ConfigMaps {
		names = append(names, "ConfigMap "+r.Name)
	}
	for _, r := range refs.Secrets {
		names = append(names, "Secret "+r.Name)
	}
	return names
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
	sandboxes, err := a.deps.runtime.ListPodSandbox(ctx, map[string]string{podspec.LabelPodUID: uid, podspec.LabelAgent: "true"})
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
