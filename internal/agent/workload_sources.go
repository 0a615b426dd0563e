package agent

import (
	"errors"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/agent/manifest"
	"github.com/berth-dev/berth/internal/agent/podspec"
	"github.com/berth-dev/berth/internal/errdefs"
)

// The agent holds ConfigMaps and Secrets only as the pods using them; a
// controller's template refers to them too, for pods it has yet to make
// (a CronJob's next run, a Deployment scaled up from 0). Each workload's
// referenced sources are kept in the source store under its uid, so that
// they come back at recovery even when no pod holds them.

// template is the pod template the object's controller makes pods from.
func (o *workloadObj) template() *v1.PodTemplateSpec {
	switch {
	case o.d != nil:
		return &o.d.Spec.Template
	case o.ds != nil:
		return &o.ds.Spec.Template
	case o.sts != nil:
		return &o.sts.Spec.Template
	case o.job != nil:
		return &o.job.Spec.Template
	case o.cj != nil:
		return &o.cj.Spec.JobTemplate.Spec.Template
	}
	return &o.rs.Spec.Template
}

// saveTemplateSourcesLocked stores, for every live workload, the
// ConfigMaps and Secrets its template refers to as the agent holds them.
func (a *Agent) saveTemplateSourcesLocked() {
	for _, o := range a.workloads {
		m := o.meta()
		if m.DeletionTimestamp != nil {
			continue
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace}, Spec: o.template().Spec}
		if err := a.deps.sources.Save(o.uid(), a.sourcesForLocked(pod)); err != nil {
			a.log.Error("workload: save the sources its template refers to", "object", o.kind()+" "+m.Namespace+"/"+m.Name, "error", err)
		}
	}
}

// recoverTemplateSourcesLocked puts a recovered workload's sources back
// where no pod brought a copy of them.
func (a *Agent) recoverTemplateSourcesLocked(o *workloadObj) {
	sources, err := a.deps.sources.Load(o.uid())
	if err != nil {
		if !errors.Is(err, errdefs.ErrNotFound) {
			a.log.Warn("recover: the sources a workload's template refers to are unreadable; pods it makes may wait for them",
				"object", o.kind()+" "+o.meta().Namespace+"/"+o.meta().Name, "error", err)
		}
		return
	}
	a.adoptSourcesLocked(sources)
}

// adoptSourcesLocked takes recovered ConfigMaps and Secrets the agent does
// not hold yet (the first copy recovered wins: pods come newest first).
func (a *Agent) adoptSourcesLocked(sources podspec.Sources) {
	for _, cm := range sources.ConfigMaps {
		if key := manifest.ObjectKey(cm.Namespace, cm.Name); a.configMaps[key] == nil {
			a.configMaps[key] = &configMapEntry{obj: cm, source: "recovered"}
		}
	}
	for _, s := range sources.Secrets {
		if key := manifest.ObjectKey(s.Namespace, s.Name); a.secrets[key] == nil {
			a.secrets[key] = &secretEntry{obj: s, source: "recovered"}
		}
	}
}

// forgetTemplateSourcesLocked removes a deleted workload's sources.
func (a *Agent) forgetTemplateSourcesLocked(o *workloadObj) {
	if err := a.deps.sources.Remove(o.uid()); err != nil {
		a.log.Warn("workload: remove the sources its template referred to", "object", o.kind()+" "+o.meta().Namespace+"/"+o.meta().Name, "error", err)
	}
}
