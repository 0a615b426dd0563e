package podspec

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// checkUserNamespace: a pod with spec.hostUsers: false runs only in a
// user namespace of its own (Mode POD with uid and gid mappings), any
// other pod only in the host's (none given, or Mode NODE).
func checkUserNamespace(pod *v1.Pod, ns *runtimeapi.UserNamespace) error {
	hostUsers := pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
	switch {
	case !hostUsers && (ns == nil || ns.GetMode() != runtimeapi.NamespaceMode_POD || len(ns.GetUids()) == 0 || len(ns.GetGids()) == 0):
		return fmt.Errorf("pod %s/%s: spec.hostUsers: false: no user namespace mappings given for it", pod.Namespace, pod.Name)
	case hostUsers && ns != nil && ns.GetMode() != runtimeapi.NamespaceMode_NODE:
		return fmt.Errorf("pod %s/%s: user namespace mode %s given, but spec.hostUsers is not false", pod.Namespace, pod.Name, ns.GetMode())
	}
	return nil
}

// mapMounts gives every mount the pod's uid and gid mappings, so that the
// runtime idmaps it, as kubelet's applyPlatformSpecificContainerConfig
// does (a pod in the host's user namespace has none: nothing changes).
func mapMounts(mounts []*runtimeapi.Mount, ns *runtimeapi.UserNamespace) {
	if ns == nil {
		return
	}
	for _, m := range mounts {
		m.UidMappings = copyIDMappings(ns.GetUids())
		m.GidMappings = copyIDMappings(ns.GetGids())
	}
}

func copyIDMappings(in []*runtimeapi.IDMapping) []*runtimeapi.IDMapping {
	if in == nil {
		return nil
	}
	out := make([]*runtimeapi.IDMapping, len(in))
	for i, m := range in {
		out[i] = &runtimeapi.IDMapping{ContainerId: m.GetContainerId(), HostId: m.GetHostId(), Length: m.GetLength()}
	}
	return out
}
