package podspec

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SeccompSettings are the node's seccomp settings.
type SeccompSettings struct {
	// ProfileRoot is the directory Localhost profiles are read from (the
	// kubelet's <root-dir>/seccomp); a pod's localhostProfile is relative to it.
	ProfileRoot string
	// DefaultToRuntimeDefault gives containers that name no profile the
	// runtime's default one (the kubelet's --seccomp-default); otherwise they
	// run Unconfined, the kubelet's default.
	DefaultToRuntimeDefault bool
}

// The paths masked and made read-only inside a container whose procMount is
// Default. An Unmasked procMount sends empty lists.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// NamespaceOptions are the pod's namespaces: network and IPC NODE with
// hostNetwork / hostIPC, else POD; PID NODE with hostPID, POD with
// shareProcessNamespace, else CONTAINER.
func NamespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Ipc:     runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	return ns
}

// seccompProfile picks the container's profile, then the pod's, then the
// node default.
func seccompProfile(pod *v1.Pod, c *v1.Container, s SeccompSettings) (*runtimeapi.SecurityProfile, error) {
	if c != nil && c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		return toSeccompProfile(c.SecurityContext.SeccompProfile, s.ProfileRoot)
	}
	if psc := pod.Spec.SecurityContext; psc != nil && psc.SeccompProfile != nil {
		return toSeccompProfile(psc.SeccompProfile, s.ProfileRoot)
	}
	if s.DefaultToRuntimeDefault {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

func toSeccompProfile(p *v1.SeccompProfile, root string) (*runtimeapi.SecurityProfile, error) {
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("seccompProfile: type Localhost needs localhostProfile")
		}
		name := *p.LocalhostProfile
		if slices.Contains(strings.Split(name, "/"), "..") {
			return nil, fmt.Errorf("seccompProfile: localhostProfile %q must not contain '..'", name)
		}
		ref := filepath.Join(root, name)
		if !filepath.IsAbs(ref) {
			return nil, fmt.Errorf("seccompProfile: localhostProfile %q: no seccomp profile root configured", name)
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: ref}, nil
	}
	return nil, fmt.Errorf("seccompProfile: unknown type %q", p.Type)
}

// appArmorAnnotationPrefix is the deprecated per-container annotation,
// honoured when neither the container nor the pod sets appArmorProfile.
const appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"

// appArmorProfile picks the container's profile, then the pod's, then the
// deprecated annotation; nil lets the runtime decide.
func appArmorProfile(pod *v1.Pod, c *v1.Container) (*runtimeapi.SecurityProfile, error) {
	var p *v1.AppArmorProfile
	switch {
	case c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil:
		p = c.SecurityContext.AppArmorProfile
	case pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.AppArmorProfile != nil:
		p = pod.Spec.SecurityContext.AppArmorProfile
	default:
		return appArmorFromAnnotation(pod.Annotations[appArmorAnnotationPrefix+c.Name])
	}
	switch p.Type {
	case v1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	case v1.AppArmorProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("appArmorProfile: type Localhost needs localhostProfile")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *p.LocalhostProfile}, nil
	}
	return nil, fmt.Errorf("appArmorProfile: unknown type %q", p.Type)
}

func appArmorFromAnnotation(value string) (*runtimeapi.SecurityProfile, error) {
	switch {
	case value == "":
		return nil, nil
	case value == "runtime/default":
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case value == "unconfined":
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	case strings.HasPrefix(value, "localhost/") && len(value) > len("localhost/"):
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: strings.TrimPrefix(value, "localhost/")}, nil
	}
	return nil, fmt.Errorf("apparmor annotation: unknown profile %q", value)
}

// podGroups are the supplemental groups of every container of the pod:
// fsGroup first, then supplementalGroups, with the policy.
func podGroups(psc *v1.PodSecurityContext) ([]int64, runtimeapi.SupplementalGroupsPolicy, error) {
	if psc == nil {
		return nil, runtimeapi.SupplementalGroupsPolicy_Merge, nil
	}
	var groups []int64
	if psc.FSGroup != nil {
		groups = append(groups, *psc.FSGroup)
	}
	groups = append(groups, psc.SupplementalGroups...)
	policy := runtimeapi.SupplementalGroupsPolicy_Merge
	if psc.SupplementalGroupsPolicy != nil {
		v, ok := runtimeapi.SupplementalGroupsPolicy_value[string(*psc.SupplementalGroupsPolicy)]
		if !ok {
			return nil, 0, fmt.Errorf("supplementalGroupsPolicy %q: unknown", *psc.SupplementalGroupsPolicy)
		}
		policy = runtimeapi.SupplementalGroupsPolicy(v)
	}
	return groups, policy, nil
}

// sandboxSecurityContext is the pod-level security context of the sandbox.
func sandboxSecurityContext(pod *v1.Pod, s SeccompSettings) (*runtimeapi.LinuxSandboxSecurityContext, error) {
	psc := pod.Spec.SecurityContext
	groups, policy, err := podGroups(psc)
	if err != nil {
		return nil, err
	}
	sc := &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions:         NamespaceOptions(pod),
		SupplementalGroups:       groups,
		SupplementalGroupsPolicy: policy,
		Privileged:               anyPrivileged(pod),
	}
	if psc != nil {
		sc.RunAsUser = int64Value(psc.RunAsUser)
		sc.RunAsGroup = int64Value(psc.RunAsGroup)
	}
	if sc.Seccomp, err = seccompProfile(pod, nil, s); err != nil {
		return nil, err
	}
	return sc, nil
}

func anyPrivileged(pod *v1.Pod) bool {
	privileged := false
	forEachContainer(pod, func(c *v1.Container) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			privileged = true
		}
	})
	return privileged
}

func int64Value(p *int64) *runtimeapi.Int64Value {
	if p == nil {
		return nil
	}
	return &runtimeapi.Int64Value{Value: *p}
}

// imageUserID splits an image's USER ("uid", "uid:gid", "name", "name:group")
// into a numeric uid or a name.
func imageUserID(user string) (uid *int64, name string) {
	u, _, _ := strings.Cut(user, ":")
	if u == "" {
		return nil, ""
	}
	if id, err := strconv.ParseInt(u, 10, 64); err == nil {
		return &id, ""
	}
	return nil, u
}
