package manifest

import "slices"

// Without is b without the objects of the given sources: what a later
// check (the agent's, against the objects it holds) left out. The
// objects are shared with b, not copied.
func (b *Bundle) Without(sources []string) *Bundle {
	keep := func(source string) bool { return !slices.Contains(sources, source) }
	out := &Bundle{Skipped: b.Skipped}
	out.ensureMaps()
	for key, cm := range b.ConfigMaps {
		if keep(b.ConfigMapSources[key]) {
			out.ConfigMaps[key], out.ConfigMapSources[key] = cm, b.ConfigMapSources[key]
		}
	}
	for key, s := range b.Secrets {
		if keep(b.SecretSources[key]) {
			out.Secrets[key], out.SecretSources[key] = s, b.SecretSources[key]
		}
	}
	out.Pods = kept(b.Pods, func(o *Pod) bool { return keep(o.Source) })
	out.Deployments = kept(b.Deployments, func(o *Deployment) bool { return keep(o.Source) })
	out.ReplicaSets = kept(b.ReplicaSets, func(o *ReplicaSet) bool { return keep(o.Source) })
	out.DaemonSets = kept(b.DaemonSets, func(o *DaemonSet) bool { return keep(o.Source) })
	out.StatefulSets = kept(b.StatefulSets, func(o *StatefulSet) bool { return keep(o.Source) })
	out.PersistentVolumeClaims = kept(b.PersistentVolumeClaims, func(o *PersistentVolumeClaim) bool { return keep(o.Source) })
	out.Services = kept(b.Services, func(o *Service) bool { return keep(o.Source) })
	out.Jobs = kept(b.Jobs, func(o *Job) bool { return keep(o.Source) })
	out.CronJobs = kept(b.CronJobs, func(o *CronJob) bool { return keep(o.Source) })
	return out
}

// kept is the objects of in that keep says to keep, in order.
func kept[T any](in []T, keep func(T) bool) []T {
	var out []T
	for _, o := range in {
		if keep(o) {
			out = append(out, o)
		}
	}
	return out
}
