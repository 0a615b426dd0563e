package agent

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/eviction"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/nodefit"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
	"github.com/berth-dev/berth/internal/errdefs"
)

// desiredPod is what the agent wants for one pod uid.
type desiredPod struct {
	pod     *v1.Pod         // as applied, defaults set; DeletionTimestamp once deleted
	sources podspec.Sources // the ConfigMaps and Secrets it refers to
	source  string          // the manifest file it came from ("-": stdin)
	// watchDir is the watched directory the pod comes from ("" when
	// applied directly); such a pod is removed by removing its file.
	watchDir string
	// reapply asks to run the pod again once its termination completes:
	// it was applied again, unchanged, while being deleted.
	reapply bool
	// sourcesVersion counts the changes of sources: the volumes are set up
	// again when it moves.
	sourcesVersion int
	// sourcesMissing names the sources recovery did not find in the
	// agent's store ("ConfigMap cfg"): until they are applied again, the
	// pod is left as it is.
	sourcesMissing []string
	// podIPs are the pod IPs the agent's store kept for a recovered pod:
	// its status keeps them while no sandbox of it is ready.
	podIPs []string
	// failure is set once the node rejected or evicted the pod: it runs
	// nothing again and keeps its Failed status until deleted.
	failure *podFailure
	// unscheduled is set while the scheduler berth plays for its
	// controllers' pods has not placed the pod: nothing of it runs.
	unscheduled *unschedulable
}

func (d desiredPod) key() string { return d.pod.Namespace + "/" + d.pod.Name }

func (d desiredPod) terminating() bool { return d.pod.DeletionTimestamp != nil }

// configMapEntry and secretEntry are the agent's copies of the ConfigMaps
// and Secrets pods refer to, keyed by namespace/name.
type configMapEntry struct {
	obj    v1.ConfigMap
	source string
}

type secretEntry struct {
	obj    v1.Secret
	source string
}

// Apply runs the pods of a bundle (validated here again), or loads and
// watches a directory.
func (a *Agent) Apply(_ context.Context, req agentapi.ApplyRequest) (agentapi.ApplyResponse, error) {
	if err := a.checkReady(); err != nil {
		return agentapi.ApplyResponse{}, err
	}
	switch {
	case req.WatchDir != "" && req.Bundle != nil:
		return agentapi.ApplyResponse{}, fmt.Errorf("apply: give either a bundle or watchDir, not both: %w", errdefs.ErrInvalidArgument)
	case req.WatchDir != "":
		return a.watchDirectory(req.WatchDir)
	case req.Bundle == nil || req.Bundle.Empty():
		return agentapi.ApplyResponse{}, fmt.Errorf("apply: the bundle holds no object: %w", errdefs.ErrInvalidArgument)
	}
	b := req.Bundle
	b.SetDefaults()
	if err := b.Validate(); err != nil {
		return agentapi.ApplyResponse{}, fmt.Errorf("%w: %w", errdefs.ErrInvalidArgument, err)
	}
	if err := checkUIDs(b); err != nil {
		return agentapi.ApplyResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkWorkloadUpdatesLocked(b); err != nil {
		return agentapi.ApplyResponse{}, err
	}
	results, err := a.applyObjectsLocked(b, "")
	return agentapi.ApplyResponse{Objects: append(skippedResults(b), results...)}, err
}

// applyObjectsLocked applies a checked bundle, as 'berth apply -f' and a
// watched directory's scans do: Services first (the pods then start with
// the cluster DNS), claims before the pods that mount them, then pods
// (from watchDir, "" for none) and workloads.
func (a *Agent) applyObjectsLocked(b *manifest.Bundle, watchDir string) ([]agentapi.ApplyResult, error) {
	if err := a.checkPodIdentitiesLocked(b); err != nil {
		return nil, err
	}
	services, err := a.applyServicesLocked(b)
	if err != nil {
		return services, err
	}
	claims, err := a.applyClaimsLocked(b)
	if err != nil {
		return append(services, claims...), err
	}
	results := append(services, a.applyBundleLocked(b, watchDir)...)
	workloads, err := a.applyWorkloadsLocked(b)
	a.saveTemplateSourcesLocked()
	a.wakeControllers()
	return append(append(claims, results...), workloads...), err
}

// Ready refuses reads of the API until Run has recovered the pods, and
// once it is stopping.
func (a *Agent) Ready() error { return a.checkReady() }

// checkReady refuses requests until Run has recovered the pods, and once
// it is stopping.
func (a *Agent) checkReady() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return fmt.Errorf("the agent is stopping: %w", errdefs.ErrUnavailable)
	}
	if !a.ready {
		return fmt.Errorf("the agent is starting (recovering its pods): %w", errdefs.ErrUnavailable)
	}
	return nil
}

// applyBundleLocked stores the bundle's ConfigMaps and Secrets, starts or
// replaces its pods, and refreshes the sources of pods whose ConfigMaps or
// Secrets changed.
func (a *Agent) applyBundleLocked(b *manifest.Bundle, watchDir string) []agentapi.ApplyResult {
	results := []agentapi.ApplyResult{}
	for _, key := range sortedKeys(b.ConfigMaps) {
		cm := b.ConfigMaps[key]
		old := a.configMaps[key]
		results = append(results, sourceResult(agentapi.KindConfigMap, cm.Namespace, cm.Name, old != nil,
			old != nil && reflect.DeepEqual(old.obj.Data, cm.Data) && reflect.DeepEqual(old.obj.BinaryData, cm.BinaryData)))
		a.configMaps[key] = &configMapEntry{obj: *cm.DeepCopy(), source: b.ConfigMapSources[key]}
	}
	for _, key := range sortedKeys(b.Secrets) {
		s := b.Secrets[key]
		old := a.secrets[key]
		results = append(results, sourceResult(agentapi.KindSecret, s.Namespace, s.Name, old != nil,
			old != nil && reflect.DeepEqual(old.obj.Data, s.Data) && old.obj.Type == s.Type))
		a.secrets[key] = &secretEntry{obj: *s.DeepCopy(), source: b.SecretSources[key]}
	}
	for _, p := range b.Pods {
		results = append(results, a.applyPodLocked(p, watchDir))
	}
	a.refreshSourcesLocked()
	return results
}

func sourceResult(kind, namespace, name string, existed, same bool) agentapi.ApplyResult {
	r := agentapi.ApplyResult{Kind: kind, Namespace: namespace, Name: name, Outcome: agentapi.OutcomeCreated}
	switch {
	case existed && same:
		r.Outcome = agentapi.OutcomeUnchanged
	case existed:
		r.Outcome = agentapi.OutcomeConfigured
	}
	return r
}

// applyPodLocked starts a pod, replaces the pod of the same name when its
// uid differs (its manifest changed), or leaves an unchanged pod alone.
func (a *Agent) applyPodLocked(p *manifest.Pod, watchDir string) agentapi.ApplyResult {
	pod := p.Pod.DeepCopy()
	key := pod.Namespace + "/" + pod.Name
	result := agentapi.ApplyResult{Kind: agentapi.KindPod, Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Outcome: agentapi.OutcomeCreated,
		Message: ignoredUIDMessage(p)}
	if w := a.workers[string(pod.UID)]; w != nil {
		// The same pod, as applied before; maybe being deleted.
		a.current[key] = w.uid
		reapplied := false
		w.setDesired(func(d *desiredPod) {
			d.watchDir, reapplied = watchDir, d.terminating()
			d.reapply = d.reapply || reapplied
		})
		if !reapplied {
			result.Outcome = agentapi.OutcomeUnchanged
		}
		return result
	}
	replaced := ""
	if uid, found := a.current[key]; found {
		a.workers[uid].beginTermination(nil, "Killing", "the pod's manifest changed: replacing the pod")
		result.Outcome = agentapi.OutcomeConfigured
		replaced = uid
	}
	// Created, as the API server creates a pod: its first generation.
	pod.CreationTimestamp, pod.Generation = metav1.NewTime(a.deps.clock.Now()), 1
	desired := desiredPod{pod: pod, sources: a.sourcesForLocked(pod), source: p.Source, watchDir: watchDir}
	if a.scheduledByAgentLocked(pod) {
		a.schedulePendingAheadLocked(pod) // the pods waiting before it take the room first
	}
	room := a.nodeRoomLocked(replaced) // the new pod takes the old one's room
	if fit := a.scheduleLocked(pod, room); !fit.Admit {
		desired.unscheduled = a.newUnschedulable(fit.Message)
		w := a.startWorkerLocked(desired)
		w.record(agentapi.EventWarning, eventFailedScheduling, "", fit.Message)
		return result
	}
	a.bindLocked(&desired, room)
	w := a.startWorkerLocked(desired)
	w.recordBound(desired)
	return result
}

// bindLocked places the pod on the node and admits it as kubelet does,
// against the room the node has left: one it does not admit is rejected
// (Failed, nothing of it runs). It reports whether the pod was admitted.
func (a *Agent) bindLocked(d *desiredPod, room nodefit.Room) bool {
	admitted, reason, message := a.admitLocked(d.pod, room)
	d.pod.Spec.NodeName = a.cfg.NodeName
	d.unscheduled = nil
	if !admitted {
		d.failure = &podFailure{reason: reason, message: eviction.RejectedMessagePrefix + message, rejected: true}
	}
	return admitted
}

// recordBound records the Scheduled event, and the rejection if kubelet's
// admission refused the pod.
func (w *podWorker) recordBound(d desiredPod) {
	w.record(agentapi.EventNormal, "Scheduled", "", fmt.Sprintf("Successfully assigned %s/%s to %s", d.pod.Namespace, d.pod.Name, d.pod.Spec.NodeName))
	if f := d.failure; f != nil && f.rejected {
		w.record(agentapi.EventWarning, f.reason, "", strings.TrimPrefix(f.message, eviction.RejectedMessagePrefix))
	}
}

// sourcesForLocked picks the ConfigMaps and Secrets the pod refers to.
func (a *Agent) sourcesForLocked(pod *v1.Pod) podspec.Sources {
	configMaps := make([]v1.ConfigMap, 0, len(a.configMaps))
	for _, key := range sortedKeys(a.configMaps) {
		configMaps = append(configMaps, a.configMaps[key].obj)
	}
	secrets := make([]v1.Secret, 0, len(a.secrets))
	for _, key := range sortedKeys(a.secrets) {
		secrets = append(secrets, a.secrets[key].obj)
	}
	return podspec.ReferencedSources(pod, configMaps, secrets)
}

// refreshSourcesLocked hands every pod whose ConfigMaps or Secrets changed
// their new content: its volumes are updated on its next sync (env, as in
// Kubernetes, only reaches containers started later).
func (a *Agent) refreshSourcesLocked() {
	for _, w := range a.workers {
		pod := w.snapshotPod()
		fresh := a.sourcesForLocked(pod)
		w.mu.Lock()
		changed := !reflect.DeepEqual(fresh, w.desired.sources)
		w.mu.Unlock()
		if changed {
			w.setDesired(func(d *desiredPod) {
				d.sources = fresh
				d.sourcesVersion++
				d.sourcesMissing = nil
			})
		}
	}
}

// Delete starts the termination of a pod, with grace overriding its
// terminationGracePeriodSeconds when given.
func (a *Agent) Delete(_ context.Context, namespace, name string, grace *int64) (agentapi.DeleteResponse, error) {
	if err := a.checkReady(); err != nil {
		return agentapi.DeleteResponse{}, err
	}
	a.mu.Lock()
	w := a.workers[a.current[namespace+"/"+name]]
	a.mu.Unlock()
	if w == nil {
		return agentapi.DeleteResponse{}, fmt.Errorf("pod %q not found in namespace %q: %w", name, namespace, errdefs.ErrNotFound)
	}
	if dir := w.snapshot().watchDir; dir != "" {
		return agentapi.DeleteResponse{}, fmt.Errorf("pod %s/%s comes from the watched directory %s: remove its file, or stop the watch with 'berth delete -f %s': %w",
			namespace, name, dir, dir, errdefs.ErrFailedPrecondition)
	}
	w.beginTermination(grace, "Killing", "deleted")
	return agentapi.DeleteResponse{Pods: []agentapi.ApplyResult{{Kind: agentapi.KindPod, Namespace: namespace, Name: name, UID: w.uid, Outcome: agentapi.OutcomeDeleted}}}, nil
}

// beginTermination marks the pod deleted: its next sync stops it within
// its grace period (a later delete may shorten it) and removes it.
func (w *podWorker) beginTermination(grace *int64, reason, why string) {
	w.mu.Lock()
	pod := w.desired.pod
	seconds := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		seconds = *pod.Spec.TerminationGracePeriodSeconds
	}
	if grace != nil {
		seconds = *grace
	}
	if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds < seconds {
		seconds = *pod.DeletionGracePeriodSeconds
	}
	first := pod.DeletionTimestamp == nil
	if first && pod.Generation > 0 {
		pod.Generation++ // the API server's bump on a graceful deletion
	}
	pod.DeletionGracePeriodSeconds = &seconds
	at := metav1.NewTime(w.deps.clock.Now().Add(time.Duration(seconds) * time.Second))
	if first || at.Before(pod.DeletionTimestamp) {
		pod.DeletionTimestamp = &at
	}
	w.desired.reapply = false
	if first && w.cancelSync != nil {
		w.cancelSync()
	}
	w.mu.Unlock()
	w.deps.probes.SetTerminating(w.uid)
	w.deps.log.Info("pod terminating", "pod", w.key, "uid", w.uid, "grace", seconds, "why", why)
	w.record(agentapi.EventNormal, reason, "", fmt.Sprintf("Stopping pod (%s), grace period %ds", why, seconds))
	w.trigger()
}

// ListPods returns the pods of a namespace (every namespace when empty),
// with their status, by namespace and name.
func (a *Agent) ListPods(namespace string) v1.PodList {
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []v1.Pod{}}
	for _, w := range a.workerList() {
		pod := w.view()
		if namespace == "" || pod.Namespace == namespace {
			list.Items = append(list.Items, pod)
		}
	}
	sort.Slice(list.Items, func(i, j int) bool {
		x, y := list.Items[i], list.Items[j]
		if x.Namespace != y.Namespace {
			return x.Namespace < y.Namespace
		}
		if x.Name != y.Name {
			return x.Name < y.Name
		}
		return x.CreationTimestamp.Before(&y.CreationTimestamp)
	})
	return list
}

// ListEvents returns the events of every pod, workload and Service of a
// namespace (every namespace when empty, with the node's), the oldest
// last occurrence first, as kubectl get events lists them.
func (a *Agent) ListEvents(namespace string) agentapi.EventList {
	list := agentapi.EventList{Items: []agentapi.PodEvent{}}
	for _, w := range a.workerList() {
		pod := w.view()
		if namespace != "" && pod.Namespace != namespace {
			continue
		}
		for _, e := range w.events.list() {
			list.Items = append(list.Items, agentapi.PodEvent{Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(pod.UID), Event: e})
		}
	}
	list.Items = append(list.Items, a.objectEvents(namespace)...)
	sort.SliceStable(list.Items, func(i, j int) bool { return list.Items[i].LastTime.Before(list.Items[j].LastTime) })
	return list
}

// Pulls lists the image pulls of the pods of namespace (every namespace
// when it is empty): for each pod and image, the pull under way or the
// last one that ended.
func (a *Agent) Pulls(namespace string) agentapi.PullList {
	list := agentapi.PullList{Items: []agentapi.ImagePull{}}
	for _, w := range a.workerList() {
		ns, name, _ := strings.Cut(w.key, "/")
		if namespace != "" && ns != namespace {
			continue
		}
		for _, p := range w.pulls.List() {
			p.Namespace, p.Pod, p.PodUID = ns, name, w.uid
			list.Items = append(list.Items, p)
		}
	}
	return list
}

// DescribePod returns the pod a name stands for (else the newest one of
// that name still terminating), its events and its containers' log files.
func (a *Agent) DescribePod(namespace, name string) (agentapi.PodDetail, error) {
	a.mu.Lock()
	w := a.workers[a.current[namespace+"/"+name]]
	if w == nil {
		for _, other := range a.workers {
			if other.key == namespace+"/"+name { // key is fixed, desired is w.mu's
				w = other
			}
		}
	}
	a.mu.Unlock()
	if w == nil {
		return agentapi.PodDetail{}, fmt.Errorf("pod %q not found in namespace %q: %w", name, namespace, errdefs.ErrNotFound)
	}
	return agentapi.PodDetail{Pod: w.view(), Events: w.events.list(), LogPaths: w.logPathsCopy()}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// objectEvents are the events of the workloads and Services of namespace
// (every namespace when empty, with the node's).
func (a *Agent) objectEvents(namespace string) []agentapi.PodEvent {
	var out []agentapi.PodEvent
	add := func(kind string, m *metav1.ObjectMeta, events *eventLog) {
		if events == nil || (namespace != "" && m.Namespace != namespace) {
			return
		}
		for _, e := range events.list() {
			out = append(out, agentapi.PodEvent{Namespace: m.Namespace, Kind: kind, Pod: m.Name, PodUID: string(m.UID), Event: e})
		}
	}
	a.mu.Lock()
	for _, o := range a.sortedWorkloadsLocked() {
		add(o.kind(), o.meta(), o.events)
	}
	for _, o := range a.services {
		add(workloadstore.KindService, &o.svc.ObjectMeta, o.events)
	}
	a.mu.Unlock()
	if namespace == "" {
		add("Node", &metav1.ObjectMeta{Name: a.cfg.NodeName}, a.pressure.events)
	}
	return out
}
