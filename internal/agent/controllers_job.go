package agent

import (
	"maps"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/workload"
)

// syncJobLocked deletes the Job's extra pods, returns those it lacks (to
// be made after the pass), updates its status and,
// once its ttlSecondsAfterFinished passed, deletes it with its pods. A
// deleted Job goes once its pods are gone.
func (a *Agent) syncJobLocked(o *workloadObj, owned []ownedPod) podCreation {
	job := o.job
	if job.DeletionTimestamp != nil {
		a.stopPodsLocked(owned, nil, o)
		if len(owned) == 0 {
			a.forgetWorkloadLocked(o)
		}
		return podCreation{}
	}
	pods := make([]workload.JobPod, len(owned))
	for i := range owned {
		pods[i] = jobPodView(&owned[i].pod)
		pods[i].Counted = o.counted[pods[i].UID]
	}
	act := workload.ReconcileJob(job, pods, a.deps.clock.Now())
	if act.Expired {
		a.expireJobLocked(o, owned)
		return podCreation{}
	}
	if !a.saveJobStatusLocked(o, act.Status, countedPods(o.counted, act.Counted, pods)) {
		return podCreation{}
	}
	for _, name := range act.Delete {
		for _, p := range owned {
			if p.pod.Name == name && p.pod.DeletionTimestamp == nil {
				p.w.beginTermination(nil, "Killing", "deleted by its Job "+job.Name)
				o.events.record(agentapi.EventNormal, "SuccessfulDelete", "", "Deleted pod: "+name)
			}
		}
	}
	recordWorkloadEvents(o, act.Events)
	creation := plannedCreation(o)
	for _, index := range act.Create {
		failures, perIndex := act.IndexFailures[index]
		creation.pods = append(creation.pods, func() {
			name := a.createJobPodLocked(o, index, failures, perIndex)
			o.events.record(agentapi.EventNormal, "SuccessfulCreate", "", "Created pod: "+name)
		})
	}
	return creation
}

// saveJobStatusLocked saves a Job's new status with the pods it counts,
// before any pod is made or deleted for it; false if it could not.
func (a *Agent) saveJobStatusLocked(o *workloadObj, status batchv1.JobStatus, counted map[string]bool) bool {
	job := o.job
	if apiequality.Semantic.DeepEqual(job.Status, status) && maps.Equal(counted, o.counted) {
		return true
	}
	prevStatus, prevCounted := job.Status, o.counted
	job.Status, o.counted = status, counted
	if err := a.saveLocked(o); err != nil {
		job.Status, o.counted = prevStatus, prevCounted // the counts stay as saved
		a.log.Error("workload: save Job status", "job", job.Namespace+"/"+job.Name, "error", err)
		return false
	}
	return true
}

// countedPods is the set of the present pods a Job's status counts:
// those counted before and those counted now (pods gone are dropped).
func countedPods(before map[string]bool, now []string, pods []workload.JobPod) map[string]bool {
	out := map[string]bool{}
	for _, uid := range now {
		out[uid] = true
	}
	for _, p := range pods {
		if before[p.UID] {
			out[p.UID] = true
		}
	}
	return out
}

// setOf makes a set of a list.
func setOf(list []string) map[string]bool {
	out := make(map[string]bool, len(list))
	for _, s := range list {
		out[s] = true
	}
	return out
}

// sortedSet lists a set in order (nil when empty).
func sortedSet(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

// expireJobLocked deletes a Job whose ttlSecondsAfterFinished passed, and
// its pods, as the TTL-after-finished controller does (saved first).
func (a *Agent) expireJobLocked(o *workloadObj, owned []ownedPod) {
	if err := a.markDeletingLocked(o); err != nil {
		a.log.Error("workload: delete expired Job", "job", o.job.Namespace+"/"+o.job.Name, "error", err)
		return
	}
	a.log.Info("workload: Job finished ttlSecondsAfterFinished ago: deleted", "job", o.job.Namespace+"/"+o.job.Name)
	a.stopPodsLocked(owned, nil, o)
}

// recordWorkloadEvents adds a controller's events to the object's log.
func recordWorkloadEvents(o *workloadObj, events []workload.Event) {
	for _, e := range events {
		typ := agentapi.EventNormal
		if e.Warning {
			typ = agentapi.EventWarning
		}
		o.events.record(typ, e.Reason, "", e.Message)
	}
}

// jobPodView is what the job controller sees of a pod.
func jobPodView(pod *v1.Pod) workload.JobPod {
	p := workload.JobPod{Pod: controllerView(pod), UID: string(pod.UID), Index: workload.JobPodIndex(pod)}
	failures := workload.JobPodIndexFailures(pod)
	p.IndexFailures, p.IndexIgnoredFailures = failures.Failed, failures.Ignored
	var finished time.Time
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for _, s := range list {
			p.Restarts += s.RestartCount
			t := s.State.Terminated
			if t == nil {
				continue
			}
			finished = latest(finished, t.FinishedAt.Time)
			if t.ExitCode != 0 {
				p.Exits = append(p.Exits, workload.ContainerExit{Name: s.Name, Code: t.ExitCode})
			}
		}
	}
	p.Conditions = map[v1.PodConditionType]v1.ConditionStatus{}
	for _, c := range pod.Status.Conditions {
		p.Conditions[c.Type] = c.Status
	}
	p.Finished = finished
	if p.Finished.IsZero() {
		p.Finished = pod.CreationTimestamp.Time
	}
	return p
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// createJobPodLocked makes a pod of the Job (of a completion index, or -1,
// with its index's failure counts when perIndex) and returns its name.
func (a *Agent) createJobPodLocked(o *workloadObj, index int, failures workload.IndexFailureCount, perIndex bool) string {
	pod := workload.NewJobPod(o.job, index)
	if perIndex {
		workload.SetJobPodIndexFailures(pod, failures)
	}
	for a.current[pod.Namespace+"/"+pod.Name] != "" {
		pod.Name = workload.JobPodName(o.job.Name, index)
	}
	pod.UID = newUID()
	a.applyPodLocked(&manifest.Pod{Pod: pod, Source: o.source}, "")
	return pod.Name
}

// ownedJobsLocked lists the Jobs a CronJob controls, not being deleted
// ones included.
func (a *Agent) ownedJobsLocked(uid string) []*workloadObj {
	var out []*workloadObj
	for _, o := range a.sortedWorkloadsLocked() {
		if o.job == nil {
			continue
		}
		if ref := metav1.GetControllerOf(o.job); ref != nil && string(ref.UID) == uid {
			out = append(out, o)
		}
	}
	return out
}

// setBatchSpec takes in's spec (a Job's or CronJob's) onto o, a copy of
// cur, and says whether it changed.
func (o *workloadObj) setBatchSpec(cur, in *workloadObj) bool {
	o.counted = cur.counted
	if cur.job != nil {
		o.job = cur.job.DeepCopy()
		spec := in.job.Spec.DeepCopy()
		spec.Selector = cur.job.Spec.Selector
		changed := !apiequality.Semantic.DeepEqual(cur.job.Spec, *spec)
		o.job.Spec = *spec
		return changed
	}
	o.cj = cur.cj.DeepCopy()
	changed := !apiequality.Semantic.DeepEqual(cur.cj.Spec, in.cj.Spec)
	o.cj.Spec = in.cj.Spec
	return changed
}

// listBatch adds a Job or CronJob to a list.
func listBatch(list *agentapi.WorkloadList, o *workloadObj) {
	if o.job != nil {
		list.Jobs = append(list.Jobs, *o.job.DeepCopy())
	} else if o.cj != nil {
		list.CronJobs = append(list.CronJobs, *o.cj.DeepCopy())
	}
}
