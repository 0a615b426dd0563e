package plan

import (
	"sort"

	v1 "k8s.io/api/core/v1"
)

// StopOrder groups the pod's containers that are not exited (running, created or
// unknown, in any sandbox) in the order the executor stops them when the pod is killed
// or deleted, as the kubelet does with sidecars: the first group holds every regular,
// ephemeral and non-restartable init container (and any container whose name is not in
// the spec), to be stopped in parallel; then each sidecar gets a group of its own, in
// reverse spec order, so that the first sidecar stops last. Empty groups are left out;
// containers within a group are in spec order.
func StopOrder(pod *v1.Pod, o Observed) [][]Container {
	rank := specRank(pod)
	sidecarIndex := map[string]int{}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; IsSidecar(c) {
			sidecarIndex[c.Name] = i
		}
	}
	var first []Container
	sidecars := make([][]Container, len(pod.Spec.InitContainers))
	for _, c := range o.Containers {
		if !live(&c) {
			continue
		}
		if i, ok := sidecarIndex[c.Name]; ok {
			sidecars[i] = append(sidecars[i], c)
			continue
		}
		first = append(first, c)
	}
	sortBySpec(first, rank)
	var groups [][]Container
	if len(first) > 0 {
		groups = append(groups, first)
	}
	for i := len(sidecars) - 1; i >= 0; i-- {
		if len(sidecars[i]) > 0 {
			sortBySpec(sidecars[i], rank)
			groups = append(groups, sidecars[i])
		}
	}
	return groups
}

func sortBySpec(cs []Container, rank func(string) int) {
	sort.SliceStable(cs, func(i, j int) bool {
		if ri, rj := rank(cs[i].Name), rank(cs[j].Name); ri != rj {
			return ri < rj
		}
		return cs[i].ID < cs[j].ID
	})
}
