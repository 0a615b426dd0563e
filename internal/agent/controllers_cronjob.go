package agent

import (
	"sort"

	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
)

// syncCronJobLocked starts the CronJob's Job due now (saved before the
// CronJob's lastScheduleTime: the Job's name, from its scheduled time, is
// the run's identity, so a restarted agent never runs one time twice),
// deletes Jobs as its policies say and updates its status. A deleted
// CronJob deletes its Jobs and goes once they are gone.
func (a *Agent) syncCronJobLocked(o *workloadObj) {
	cj := o.cj
	owned := a.ownedJobsLocked(o.uid())
	if cj.DeletionTimestamp != nil {
		for _, j := range owned {
			if err := a.markDeletingLocked(j); err != nil {
				a.log.Error("workload: delete Job", "job", j.job.Name, "error", err)
			}
		}
		if len(owned) == 0 {
			a.forgetWorkloadLocked(o)
		}
		return
	}
	var jobs []*batchv1.Job
	byName := map[string]*workloadObj{}
	for _, j := range owned {
		if j.job.DeletionTimestamp == nil {
			jobs = append(jobs, j.job)
			byName[j.job.Name] = j
		}
	}
	act := workload.ReconcileCronJob(cj, jobs, a.deps.clock.Now())
	if act.Create != nil && !a.createCronJobJobLocked(o, &act) {
		return
	}
	for _, name := range act.Delete {
		j := byName[name]
		if j == nil {
			continue
		}
		if err := a.markDeletingLocked(j); err != nil {
			a.log.Error("workload: delete Job", "cronjob", cj.Namespace+"/"+cj.Name, "job", name, "error", err)
		}
	}
	if !apiequality.Semantic.DeepEqual(cj.Status, act.Status) {
		cj.Status = act.Status
		if err := a.saveLocked(o); err != nil {
			a.log.Error("workload: save CronJob status", "cronjob", cj.Namespace+"/"+cj.Name, "error", err)
		}
	}
	recordWorkloadEvents(o, act.Events)
}

// createCronJobJobLocked saves and adds the Job the CronJob's controller
// made; false when it could not (another Job holds its name, or the save
// failed): the CronJob is left as it was, to try again.
func (a *Agent) createCronJobJobLocked(o *workloadObj, act *workload.CronJobActions) bool {
	job := act.Create
	if other := a.liveWorkloadLocked(workloadstore.KindJob, job.Namespace, job.Name); other != nil {
		o.events.record(agentapi.EventWarning, "FailedCreate", "", "Error creating job: jobs.batch \""+job.Name+"\" already exists")
		return false
	}
	now := metav1.NewTime(a.deps.clock.Now())
	job.UID, job.Generation, job.CreationTimestamp = newUID(), 1, now
	workload.SetJobSelector(job)
	j := &workloadObj{job: job, source: o.source, events: newEventLog(a.deps.clock.Now)}
	if err := a.saveLocked(j); err != nil {
		a.log.Error("workload: save Job", "cronjob", o.cj.Namespace+"/"+o.cj.Name, "job", job.Name, "error", err)
		return false
	}
	a.addWorkloadLocked(j)
	for i := range act.Status.Active {
		if act.Status.Active[i].Name == job.Name {
			act.Status.Active[i].UID = job.UID
		}
	}
	return true
}

// describeBatchLocked fills a Job's detail (its pods) or a CronJob's (its
// Jobs, oldest first).
func (a *Agent) describeBatchLocked(detail *agentapi.WorkloadDetail, o *workloadObj) {
	if o.job != nil {
		detail.Job = o.job.DeepCopy()
		for _, p := range a.ownedPodsLocked()[o.uid()] {
			detail.Pods = append(detail.Pods, p.pod)
		}
		sort.Slice(detail.Pods, func(i, j int) bool { return detail.Pods[i].Name < detail.Pods[j].Name })
		return
	}
	detail.CronJob = o.cj.DeepCopy()
	for _, j := range a.ownedJobsLocked(o.uid()) {
		if j.job.DeletionTimestamp == nil {
			detail.Jobs = append(detail.Jobs, *j.job.DeepCopy())
		}
	}
	sort.SliceStable(detail.Jobs, func(i, j int) bool {
		return detail.Jobs[i].CreationTimestamp.Before(&detail.Jobs[j].CreationTimestamp)
	})
}
