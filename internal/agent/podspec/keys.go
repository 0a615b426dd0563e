package podspec

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Labels the agent puts on every sandbox and container it creates. The
// Kubernetes keys are the kubelet's, so tools that know them (crictl) work.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	// LabelAgent marks sandboxes (and, so that a list can be filtered the same
	// way, containers) owned by the berth agent; its value is "true".
	LabelAgent = "berth.dev/agent"
)

// Sandbox annotations.
const (
	// AnnotationPod holds the Pod as applied (defaults set), JSON.
	AnnotationPod = "berth.dev/pod"
	// AnnotationSourceRefs names the ConfigMaps and Secrets the pod refers
	// to, with a digest of each (JSON of SourceRefs); their contents are in
	// the agent's store, never in CRI metadata.
	AnnotationSourceRefs = "berth.dev/source-refs"
	// AnnotationSources held the ConfigMaps and Secrets themselves (JSON of
	// Sources) on sandboxes made before the agent kept them in its store:
	// read back once, at recovery, never written.
	AnnotationSources = "berth.dev/sources"
	// AnnotationConfigSource names where the pod came from ("file", "api").
	AnnotationConfigSource = "kubernetes.io/config.source"
	// AnnotationConfigSeen is when the agent first saw this version of the
	// pod, RFC 3339 with nanoseconds.
	AnnotationConfigSeen = "kubernetes.io/config.seen"
)

// Container annotations.
const (
	AnnotationContainerHash            = "io.kubernetes.container.hash"
	AnnotationRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	// AnnotationContainerPorts holds the container's ports, JSON, when it
	// declares any (informational, as the kubelet does).
	AnnotationContainerPorts = "io.kubernetes.container.ports"
	AnnotationContainerType  = "berth.dev/container-type"
)

// ContainerType says which list of the pod spec a container comes from and
// how the planner treats it.
type ContainerType string

const (
	// ContainerTypeInit is an init container: runs to completion, in order.
	ContainerTypeInit ContainerType = "init"
	// ContainerTypeSidecar is an init container with restartPolicy Always:
	// started in order with the init containers and kept running.
	ContainerTypeSidecar ContainerType = "sidecar"
	// ContainerTypeRegular is one of spec.containers.
	ContainerTypeRegular ContainerType = "regular"
	// ContainerTypeEphemeral is one of spec.ephemeralContainers.
	ContainerTypeEphemeral ContainerType = "ephemeral"
)

// Valid reports whether t is one of the four known types.
func (t ContainerType) Valid() bool {
	switch t {
	case ContainerTypeInit, ContainerTypeSidecar, ContainerTypeRegular, ContainerTypeEphemeral:
		return true
	}
	return false
}

// IsSidecar reports whether an init container is a sidecar (restartPolicy
// Always).
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// FindContainer looks a container up by name in every list of the pod spec.
// Ephemeral containers are returned as a *v1.Container view of their common
// fields, as the kubelet runs them.
func FindContainer(pod *v1.Pod, name string) (*v1.Container, ContainerType, bool) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.Name == name {
			if IsSidecar(c) {
				return c, ContainerTypeSidecar, true
			}
			return c, ContainerTypeInit, true
		}
	}
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == name {
			return c, ContainerTypeRegular, true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if ec.Name == name {
			return (*v1.Container)(&ec.EphemeralContainerCommon), ContainerTypeEphemeral, true
		}
	}
	return nil, "", false
}

// reservedKeyPrefixes are the label and annotation key prefixes berth
// sets on sandboxes and containers itself (its own berth.dev/ keys, the
// kubelet's io.kubernetes.pod./io.kubernetes.container. labels and
// annotations, the runtime's io.kubernetes.cri. OCI annotations and the
// kubelet's kubernetes.io/config. annotations). A pod may not carry them:
// the agent would read them back as its own.
var reservedKeyPrefixes = []string{
	"berth.dev/",
	"io.kubernetes.pod.",
	"io.kubernetes.container.",
	"io.kubernetes.cri.",
	"kubernetes.io/config.",
}

// ReservedKey reports whether a label or annotation key is berth's own
// (see reservedKeyPrefixes); subdomains of berth.dev count too. Keys are
// compared case-insensitively, as annotation keys are validated.
func ReservedKey(key string) bool {
	key = strings.ToLower(key)
	for _, prefix := range reservedKeyPrefixes {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	domain, _, found := strings.Cut(key, "/")
	return found && strings.HasSuffix(domain, ".berth.dev")
}

// withoutReservedKeys copies a pod's labels or annotations, leaving out
// berth's own keys (validation refuses them; this is the second line).
func withoutReservedKeys(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+8)
	for k, v := range m {
		if !ReservedKey(k) {
			out[k] = v
		}
	}
	return out
}
