package manifest

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
)

// Pod is a decoded Pod and the source it came from.
type Pod struct {
	*v1.Pod
	// Source is the file the pod came from, or "-" for stdin.
	Source string `json:"source"`
	// IgnoredUID is the metadata.uid the manifest gave, when it differs
	// from the pod's: pod uids are the agent's (doc.go), so a given one
	// is ignored, as the API server ignores it on create.
	IgnoredUID string `json:"ignoredUID,omitempty"`
}

// Bundle is a set of Pods with the ConfigMaps and Secrets they may refer to.
// Map keys are ObjectKey(namespace, name); each object's source is under the
// same key in ConfigMapSources / SecretSources.
type Bundle struct {
	Pods             []*Pod                   `json:"pods,omitempty"`
	ConfigMaps       map[string]*v1.ConfigMap `json:"configMaps,omitempty"`
	Secrets          map[string]*v1.Secret    `json:"secrets,omitempty"`
	ConfigMapSources map[string]string        `json:"configMapSources,omitempty"`
	SecretSources    map[string]string        `json:"secretSources,omitempty"`
	Deployments      []*Deployment            `json:"deployments,omitempty"`
	ReplicaSets      []*ReplicaSet            `json:"replicaSets,omitempty"`
	DaemonSets       []*DaemonSet             `json:"daemonSets,omitempty"`
	StatefulSets     []*StatefulSet           `json:"statefulSets,omitempty"`
	// PersistentVolumeClaims are claims applied on their own.
	PersistentVolumeClaims []*PersistentVolumeClaim `json:"persistentVolumeClaims,omitempty"`
	Services               []*Service               `json:"services,omitempty"`
	Jobs                   []*Job                   `json:"jobs,omitempty"`
	CronJobs               []*CronJob               `json:"cronJobs,omitempty"`
	// Skipped are the objects of cluster kinds berth does not apply
	// (skipped.go), in the order read; an object may appear twice.
	Skipped []*Skipped `json:"skipped,omitempty"`
}

// ObjectKey is the key of an object in a Bundle's maps: "namespace/name",
// with an empty namespace read as "default".
func ObjectKey(namespace, name string) string {
	return namespaceOrDefault(namespace) + "/" + name
}

// Pod returns the pod namespace/name, or nil.
func (b *Bundle) Pod(namespace, name string) *Pod {
	key := ObjectKey(namespace, name)
	for _, p := range b.Pods {
		if ObjectKey(p.Namespace, p.Name) == key {
			return p
		}
	}
	return nil
}

// Merge adds o's objects to b. If any object of o is already in b, nothing
// is added and the error names both sources of every such object.
func (b *Bundle) Merge(o *Bundle) error {
	if problems := b.conflicts(o); len(problems) > 0 {
		return invalid(problems)
	}
	b.ensureMaps()
	b.Pods = append(b.Pods, o.Pods...)
	b.Deployments = append(b.Deployments, o.Deployments...)
	b.ReplicaSets = append(b.ReplicaSets, o.ReplicaSets...)
	b.DaemonSets = append(b.DaemonSets, o.DaemonSets...)
	b.StatefulSets = append(b.StatefulSets, o.StatefulSets...)
	b.PersistentVolumeClaims = append(b.PersistentVolumeClaims, o.PersistentVolumeClaims...)
	b.Services = append(b.Services, o.Services...)
	b.Jobs = append(b.Jobs, o.Jobs...)
	b.CronJobs = append(b.CronJobs, o.CronJobs...)
	b.Skipped = append(b.Skipped, o.Skipped...)
	for key, cm := range o.ConfigMaps {
		b.ConfigMaps[key] = cm
		b.ConfigMapSources[key] = o.ConfigMapSources[key]
	}
	for key, s := range o.Secrets {
		b.Secrets[key] = s
		b.SecretSources[key] = o.SecretSources[key]
	}
	return nil
}

// conflicts lists the objects of o that b already holds.
func (b *Bundle) conflicts(o *Bundle) []Problem {
	var problems []Problem
	for _, p := range o.Pods {
		if old := b.Pod(p.Namespace, p.Name); old != nil {
			problems = append(problems, duplicateProblem(p.Source, objectName("Pod", &p.ObjectMeta), old.Source))
		}
	}
	for _, key := range sortedKeys(o.ConfigMaps) {
		if _, found := b.ConfigMaps[key]; found {
			cm := o.ConfigMaps[key]
			problems = append(problems, duplicateProblem(o.ConfigMapSources[key], objectName("ConfigMap", &cm.ObjectMeta), b.ConfigMapSources[key]))
		}
	}
	for _, key := range sortedKeys(o.Secrets) {
		if _, found := b.Secrets[key]; found {
			s := o.Secrets[key]
			problems = append(problems, duplicateProblem(o.SecretSources[key], objectName("Secret", &s.ObjectMeta), b.SecretSources[key]))
		}
	}
	return append(problems, b.workloadConflicts(o)...)
}

func duplicateProblem(source, object, firstSource string) Problem {
	return Problem{Source: source, Object: object, Err: fmt.Errorf("also defined in %s", firstSource)}
}

func (b *Bundle) ensureMaps() {
	if b.ConfigMaps == nil {
		b.ConfigMaps = map[string]*v1.ConfigMap{}
	}
	if b.Secrets == nil {
		b.Secrets = map[string]*v1.Secret{}
	}
	if b.ConfigMapSources == nil {
		b.ConfigMapSources = map[string]string{}
	}
	if b.SecretSources == nil {
		b.SecretSources = map[string]string{}
	}
}

// singleObject makes a one-object bundle, so that adding an object to a
// bundle goes through Merge's duplicate check.
func singleObject(object any, source string) *Bundle {
	b := &Bundle{}
	b.ensureMaps()
	switch o := object.(type) {
	case *v1.Pod:
		b.Pods = []*Pod{{Pod: o, Source: source}}
	case *v1.ConfigMap:
		key := ObjectKey(o.Namespace, o.Name)
		b.ConfigMaps[key], b.ConfigMapSources[key] = o, source
	case *v1.Secret:
		key := ObjectKey(o.Namespace, o.Name)
		b.Secrets[key], b.SecretSources[key] = o, source
	case *appsv1.Deployment:
		b.Deployments = []*Deployment{{Deployment: o, Source: source}}
	case *appsv1.ReplicaSet:
		b.ReplicaSets = []*ReplicaSet{{ReplicaSet: o, Source: source}}
	case *appsv1.DaemonSet:
		b.DaemonSets = []*DaemonSet{{DaemonSet: o, Source: source}}
	case *appsv1.StatefulSet:
		b.StatefulSets = []*StatefulSet{{StatefulSet: o, Source: source}}
	case *v1.PersistentVolumeClaim:
		b.PersistentVolumeClaims = []*PersistentVolumeClaim{{PersistentVolumeClaim: o, Source: source}}
	case *v1.Service:
		b.Services = []*Service{{Service: o, Source: source}}
	case *batchv1.Job:
		b.Jobs = []*Job{{Job: o, Source: source}}
	case *batchv1.CronJob:
		b.CronJobs = []*CronJob{{CronJob: o, Source: source}}
	}
	return b
}

// Referenced returns the ConfigMaps and Secrets of the bundle that pod
// refers to (volumes, projected sources, env and envFrom, in its own
// namespace), sorted by name. References to absent objects are skipped.
func (b *Bundle) Referenced(pod *v1.Pod) ([]*v1.ConfigMap, []*v1.Secret) {
	var configMaps []*v1.ConfigMap
	var secrets []*v1.Secret
	for _, name := range sortedKeys(podReferences(pod, configMapRef)) {
		if cm, ok := b.ConfigMaps[ObjectKey(pod.Namespace, name)]; ok {
			configMaps = append(configMaps, cm)
		}
	}
	for _, name := range sortedKeys(podReferences(pod, secretRef)) {
		if s, ok := b.Secrets[ObjectKey(pod.Namespace, name)]; ok {
			secrets = append(secrets, s)
		}
	}
	return configMaps, secrets
}

// sortedKeys returns m's keys in order, so that problems come out in a stable order.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
