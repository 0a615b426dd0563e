package manifest

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deployment is a decoded apps/v1 Deployment and the source it came from.
type Deployment struct {
	*appsv1.Deployment
	Source string `json:"source"`
	// KeepPaused: the manifest leaves spec.paused out, so applying it
	// keeps a pause made by `rollout pause` (kubectl apply merges only
	// the fields a manifest names).
	KeepPaused bool `json:"keepPaused,omitempty"`
}

// markKeepPaused sets KeepPaused on the bundle's entry of d when data, the
// Deployment's JSON, has no spec.paused.
func markKeepPaused(b *Bundle, d *appsv1.Deployment, data []byte) {
	var doc struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return
	}
	if _, named := doc.Spec["paused"]; named {
		return
	}
	for _, entry := range b.Deployments {
		if entry.Deployment == d {
			entry.KeepPaused = true
		}
	}
}

// ReplicaSet is a decoded apps/v1 ReplicaSet and the source it came from.
type ReplicaSet struct {
	*appsv1.ReplicaSet
	Source string `json:"source"`
}

// The apps/v1 kinds berth reads.
const (
	appsV1         = "apps/v1"
	kindDeployment = "Deployment"
	kindReplicaSet = "ReplicaSet"
	kindDaemonSet  = "DaemonSet"
)

// Workload is one object of a workload kind, for what every kind shares.
type Workload struct {
	Kind   string
	Meta   *metav1.ObjectMeta
	Source string
}

// Workloads lists the bundle's Deployments, ReplicaSets, StatefulSets
// and PersistentVolumeClaims.
func (b *Bundle) Workloads() []Workload {
	var out []Workload
	for _, d := range b.Deployments {
		out = append(out, Workload{Kind: kindDeployment, Meta: &d.ObjectMeta, Source: d.Source})
	}
	for _, rs := range b.ReplicaSets {
		out = append(out, Workload{Kind: kindReplicaSet, Meta: &rs.ObjectMeta, Source: rs.Source})
	}
	for _, ds := range b.DaemonSets {
		out = append(out, Workload{Kind: kindDaemonSet, Meta: &ds.ObjectMeta, Source: ds.Source})
	}
	for _, s := range b.StatefulSets {
		out = append(out, Workload{Kind: kindStatefulSet, Meta: &s.ObjectMeta, Source: s.Source})
	}
	for _, c := range b.PersistentVolumeClaims {
		out = append(out, Workload{Kind: kindPersistentVolumeClaim, Meta: &c.ObjectMeta, Source: c.Source})
	}
	for _, s := range b.Services {
		out = append(out, Workload{Kind: kindService, Meta: &s.ObjectMeta, Source: s.Source})
	}
	for _, j := range b.Jobs {
		out = append(out, Workload{Kind: kindJob, Meta: &j.ObjectMeta, Source: j.Source})
	}
	for _, cj := range b.CronJobs {
		out = append(out, Workload{Kind: kindCronJob, Meta: &cj.ObjectMeta, Source: cj.Source})
	}
	return out
}

// Empty says whether the bundle holds no object (a skipped one counts).
func (b *Bundle) Empty() bool {
	return len(b.Pods)+len(b.ConfigMaps)+len(b.Secrets)+len(b.Deployments)+len(b.ReplicaSets)+len(b.DaemonSets)+len(b.StatefulSets)+len(b.PersistentVolumeClaims)+len(b.Services)+len(b.Jobs)+len(b.CronJobs)+len(b.Skipped) == 0
}

// workloadConflicts lists the workloads of o that b already holds.
func (b *Bundle) workloadConflicts(o *Bundle) []Problem {
	seen := map[string]string{}
	for _, w := range b.Workloads() {
		seen[w.Kind+" "+ObjectKey(w.Meta.Namespace, w.Meta.Name)] = w.Source
	}
	var problems []Problem
	for _, w := range o.Workloads() {
		if first, found := seen[w.Kind+" "+ObjectKey(w.Meta.Namespace, w.Meta.Name)]; found {
			problems = append(problems, duplicateProblem(w.Source, objectName(w.Kind, w.Meta), first))
		}
	}
	return problems
}
