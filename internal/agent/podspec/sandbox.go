package podspec

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Defaults of SandboxOptions.
const (
	DefaultLogRoot      = "/var/log/pods"
	DefaultCgroupParent = "/berth"
	// SlicePrefix is the systemd counterpart of DefaultCgroupParent: pod
	// slices are berth-kubepods-....slice, below berth.slice.
	SlicePrefix    = "berth"
	maxHostnameLen = 63
)

// SandboxOptions are the node-wide settings a sandbox config depends on.
type SandboxOptions struct {
	// LogRoot holds the pods' log directories (DefaultLogRoot when empty).
	LogRoot string
	// CgroupParent is the cgroupfs path under which pod cgroups are laid
	// out, see PodCgroupParent (DefaultCgroupParent when empty).
	CgroupParent string
	// SystemdCgroup lays pods out as systemd slices (PodSlice), for a
	// runtime whose cgroup driver is systemd (CRI RuntimeConfig).
	SystemdCgroup bool
	// HostDNS is the host's resolv.conf (see ParseResolvConf), the base of
	// every dnsPolicy but None.
	HostDNS DNS
	// ClusterDNS is the node's cluster DNS, nil when it serves no
	// Service: the base of ClusterFirst pods (see PodDNSConfig).
	ClusterDNS *ClusterDNS
	Seccomp    SeccompSettings
	// ConfigSource goes into AnnotationConfigSource ("file" when empty).
	ConfigSource string
	// ConfigSeen goes into AnnotationConfigSeen unless zero.
	ConfigSeen time.Time
	// UserNamespace is the pod's user namespace (package userns: Mode
	// NODE, or Mode POD with the pod's mappings for spec.hostUsers:
	// false), sent as is; nil sends none. A pod with hostUsers: false
	// needs Mode POD.
	UserNamespace *runtimeapi.UserNamespace
}

// SandboxConfig is the CRI config of the pod's sandbox, as the kubelet
// builds it, attempt being the number of sandboxes created for this pod uid
// before. refs go into AnnotationSourceRefs: the ConfigMaps and Secrets
// themselves never go into CRI metadata.
func SandboxConfig(pod *v1.Pod, attempt uint32, refs SourceRefs, opts SandboxOptions) (*runtimeapi.PodSandboxConfig, error) {
	if err := checkPodIdentity(pod); err != nil {
		return nil, err
	}
	if err := checkUserNamespace(pod, opts.UserNamespace); err != nil {
		return nil, err
	}
	hostname, err := Hostname(pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	dns, err := PodDNSConfig(pod, opts.HostDNS, opts.ClusterDNS)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	annotations, err := sandboxAnnotations(pod, refs, opts)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	linux, err := sandboxLinuxConfig(pod, opts)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		Hostname:     hostname,
		LogDirectory: PodLogDirectory(opts.LogRoot, pod.Namespace, pod.Name, string(pod.UID)),
		DnsConfig:    dns,
		PortMappings: PortMappings(pod),
		Labels:       sandboxLabels(pod),
		Annotations:  annotations,
		Linux:        linux,
	}, nil
}

func checkPodIdentity(pod *v1.Pod) error {
	for _, f := range [][2]string{{"name", pod.Name}, {"namespace", pod.Namespace}, {"uid", string(pod.UID)}} {
		if v := f[1]; v == "" || strings.ContainsAny(v, "/\x00") || v == "." || v == ".." {
			return fmt.Errorf("pod metadata.%s %q: empty or not usable in a path", f[0], v)
		}
	}
	return nil
}

func sandboxLinuxConfig(pod *v1.Pod, opts SandboxOptions) (*runtimeapi.LinuxPodSandboxConfig, error) {
	sc, err := sandboxSecurityContext(pod, opts.Seccomp)
	if err != nil {
		return nil, err
	}
	sc.NamespaceOptions.UsernsOptions = opts.UserNamespace
	var sysctls map[string]string
	if psc := pod.Spec.SecurityContext; psc != nil && len(psc.Sysctls) > 0 {
		sysctls = make(map[string]string, len(psc.Sysctls))
		for _, s := range psc.Sysctls {
			sysctls[s.Name] = s.Value
		}
	}
	return &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent:    podParent(opts, pod),
		SecurityContext: sc,
		Sysctls:         sysctls,
		Overhead:        sandboxOverhead(pod),
		Resources:       sandboxResources(pod),
	}, nil
}

// Hostname is the pod's hostname: "" with hostNetwork (the runtime then uses
// the host's), else hostnameOverride, spec.hostname or the pod name, cut to
// 63 characters without a trailing '-' or '.'. There is no cluster domain,
// so subdomain and setHostnameAsFQDN change nothing.
func Hostname(pod *v1.Pod) (string, error) {
	if pod.Spec.HostNetwork {
		return "", nil
	}
	name := pod.Name
	switch {
	case pod.Spec.HostnameOverride != nil && *pod.Spec.HostnameOverride != "":
		name = *pod.Spec.HostnameOverride
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			return "", fmt.Errorf("hostnameOverride %q: %s", name, strings.Join(msgs, "; "))
		}
	case pod.Spec.Hostname != "":
		name = pod.Spec.Hostname
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			return "", fmt.Errorf("hostname %q: %s", name, strings.Join(msgs, "; "))
		}
	}
	if len(name) > maxHostnameLen {
		name = strings.TrimRight(name[:maxHostnameLen], "-.")
	}
	if name == "" {
		return "", fmt.Errorf("hostname: empty after truncation")
	}
	return name, nil
}

// PodLogDirectory is where the pod's container logs go:
// <root>/<namespace>_<name>_<uid> (root DefaultLogRoot when empty).
func PodLogDirectory(root, namespace, name, uid string) string {
	if root == "" {
		root = DefaultLogRoot
	}
	return filepath.Join(root, namespace+"_"+name+"_"+uid)
}

// ContainerLogPath is a container's log file relative to the pod's log
// directory: <container>/<restartCount>.log.
func ContainerLogPath(container string, restartCount int) string {
	return filepath.Join(container, fmt.Sprintf("%d.log", restartCount))
}

// PodCgroupParent lays pods out like the kubelet's cgroupfs driver, under
// base (DefaultCgroupParent when empty): Guaranteed pods in
// <base>/kubepods/pod<uid>, Burstable in <base>/kubepods/burstable/pod<uid>,
// BestEffort in <base>/kubepods/besteffort/pod<uid>. The runtime puts each
// container in <that>/<container id>.
func PodCgroupParent(base string, pod *v1.Pod) string {
	return PodCgroupParentFor(base, pod.UID, QOSClass(pod))
}

// PodCgroupParentFor is PodCgroupParent for a uid and a QoS class, for a
// caller that does not know the pod's class (a cleanup tries each).
func PodCgroupParentFor(base string, uid types.UID, qos v1.PodQOSClass) string {
	if base == "" {
		base = DefaultCgroupParent
	}
	leaf := "pod" + string(uid)
	switch qos {
	case v1.PodQOSBurstable:
		return path.Join("/", base, "kubepods", "burstable", leaf)
	case v1.PodQOSBestEffort:
		return path.Join("/", base, "kubepods", "besteffort", leaf)
	}
	return path.Join("/", base, "kubepods", leaf)
}

// PodSlice lays pods out like the kubelet's systemd driver, below
// berth.slice: berth-kubepods-pod<uid>.slice (Guaranteed),
// berth-kubepods-burstable-pod<uid>.slice, berth-kubepods-besteffort-pod<uid>.slice.
// In the uid every character but letters, digits and '_' becomes '_' (the
// kubelet turns its dashes so; a dash would start a new level, a ':' would
// end the slice in a cgroupsPath).
func PodSlice(pod *v1.Pod) string {
	return PodSliceFor(pod.UID, QOSClass(pod))
}

// PodSliceFor is PodSlice for a uid and a QoS class.
func PodSliceFor(uid types.UID, qos v1.PodQOSClass) string {
	leaf := "pod" + strings.Map(func(r rune) rune {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, string(uid))
	parts := []string{SlicePrefix, "kubepods"}
	switch qos {
	case v1.PodQOSBurstable:
		parts = append(parts, "burstable")
	case v1.PodQOSBestEffort:
		parts = append(parts, "besteffort")
	}
	return strings.Join(append(parts, leaf), "-") + ".slice"
}

// podParent is the pod's cgroup parent for the runtime's driver.
func podParent(opts SandboxOptions, pod *v1.Pod) string {
	if opts.SystemdCgroup {
		return PodSlice(pod)
	}
	return PodCgroupParent(opts.CgroupParent, pod)
}

// PortMappings lists the ports of the pod's regular containers as the
// kubelet does: every declared port (the runtime publishes only those with a
// hostPort), a port repeated within a container (same name, or same
// protocol, host IP and ports) once.
func PortMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for _, c := range pod.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range c.Ports {
			key := p.Name
			if key == "" {
				key = fmt.Sprintf("%s/%s/%d/%d", p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, &runtimeapi.PortMapping{
				Protocol:      runtimeProtocol(p.Protocol),
				ContainerPort: p.ContainerPort,
				HostPort:      p.HostPort,
				HostIp:        p.HostIP,
			})
		}
	}
	return out
}

func runtimeProtocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}
