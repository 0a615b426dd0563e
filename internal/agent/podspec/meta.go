package podspec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// PodRef identifies the pod a sandbox or container belongs to.
type PodRef struct {
	Name, Namespace, UID string
}

// SandboxMeta is what the agent reads back from a sandbox's labels and
// annotations.
type SandboxMeta struct {
	PodRef
	// Pod is the pod as applied.
	Pod *v1.Pod
	// SourceRefs name the ConfigMaps and Secrets the pod referred to when
	// the sandbox was made, with their digests (may be empty).
	SourceRefs SourceRefs
	// LegacySources are the ConfigMaps and Secrets themselves, from a
	// sandbox made before the agent kept them in its store (else empty).
	LegacySources Sources
	ConfigSource  string
	// ConfigSeen is zero when the annotation is absent.
	ConfigSeen time.Time
}

// ContainerMeta is what the agent reads back from a container's labels and
// annotations.
type ContainerMeta struct {
	PodRef
	Name                     string
	Type                     ContainerType
	RestartCount             int
	Hash                     string
	TerminationMessagePath   string
	TerminationMessagePolicy v1.TerminationMessagePolicy
}

// IsAgentOwned reports whether a sandbox or container carries the agent's
// label.
func IsAgentOwned(labels map[string]string) bool {
	return labels[LabelAgent] == "true"
}

// ParseSandboxMeta rebuilds a sandbox's metadata; a missing or malformed
// label or annotation is an error naming it.
func ParseSandboxMeta(labels, annotations map[string]string) (SandboxMeta, error) {
	ref, err := parsePodRef(labels)
	if err != nil {
		return SandboxMeta{}, err
	}
	meta := SandboxMeta{PodRef: ref, ConfigSource: annotations[AnnotationConfigSource]}
	podJSON, ok := annotations[AnnotationPod]
	if !ok {
		return SandboxMeta{}, fmt.Errorf("sandbox of pod %s/%s: annotation %s missing", ref.Namespace, ref.Name, AnnotationPod)
	}
	meta.Pod = &v1.Pod{}
	if err := json.Unmarshal([]byte(podJSON), meta.Pod); err != nil {
		return SandboxMeta{}, fmt.Errorf("sandbox of pod %s/%s: annotation %s: %w", ref.Namespace, ref.Name, AnnotationPod, err)
	}
	if string(meta.Pod.UID) != ref.UID {
		return SandboxMeta{}, fmt.Errorf("sandbox of pod %s/%s: annotation %s has uid %q, label %s has %q",
			ref.Namespace, ref.Name, AnnotationPod, meta.Pod.UID, LabelPodUID, ref.UID)
	}
	for key, into := range map[string]any{AnnotationSourceRefs: &meta.SourceRefs, AnnotationSources: &meta.LegacySources} {
		if s, ok := annotations[key]; ok {
			if err := json.Unmarshal([]byte(s), into); err != nil {
				return SandboxMeta{}, fmt.Errorf("sandbox of pod %s/%s: annotation %s: %w", ref.Namespace, ref.Name, key, err)
			}
		}
	}
	if s, ok := annotations[AnnotationConfigSeen]; ok {
		if meta.ConfigSeen, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return SandboxMeta{}, fmt.Errorf("sandbox of pod %s/%s: annotation %s: %w", ref.Namespace, ref.Name, AnnotationConfigSeen, err)
		}
	}
	return meta, nil
}

// ParseContainerMeta rebuilds a container's metadata; a missing or
// malformed label or annotation is an error naming it.
func ParseContainerMeta(labels, annotations map[string]string) (ContainerMeta, error) {
	ref, err := parsePodRef(labels)
	if err != nil {
		return ContainerMeta{}, err
	}
	meta := ContainerMeta{
		PodRef:                   ref,
		Name:                     labels[LabelContainerName],
		Type:                     ContainerType(annotations[AnnotationContainerType]),
		Hash:                     annotations[AnnotationContainerHash],
		TerminationMessagePath:   annotations[AnnotationTerminationMessagePath],
		TerminationMessagePolicy: v1.TerminationMessagePolicy(annotations[AnnotationTerminationMessagePolicy]),
	}
	where := fmt.Sprintf("container %q of pod %s/%s", meta.Name, ref.Namespace, ref.Name)
	switch {
	case meta.Name == "":
		return ContainerMeta{}, fmt.Errorf("container of pod %s/%s: label %s missing", ref.Namespace, ref.Name, LabelContainerName)
	case !meta.Type.Valid():
		return ContainerMeta{}, fmt.Errorf("%s: annotation %s: %q is not a container type", where, AnnotationContainerType, meta.Type)
	case meta.Hash == "":
		return ContainerMeta{}, fmt.Errorf("%s: annotation %s missing", where, AnnotationContainerHash)
	}
	count, err := strconv.Atoi(annotations[AnnotationRestartCount])
	if err != nil || count < 0 {
		return ContainerMeta{}, fmt.Errorf("%s: annotation %s: %q is not a restart count", where, AnnotationRestartCount, annotations[AnnotationRestartCount])
	}
	meta.RestartCount = count
	return meta, nil
}

func parsePodRef(labels map[string]string) (PodRef, error) {
	ref := PodRef{Name: labels[LabelPodName], Namespace: labels[LabelPodNamespace], UID: labels[LabelPodUID]}
	for _, key := range []string{LabelPodName, LabelPodNamespace, LabelPodUID} {
		if labels[key] == "" {
			return PodRef{}, fmt.Errorf("label %s missing", key)
		}
	}
	return ref, nil
}

// sandboxLabels are the pod's labels (berth's own keys left out) plus
// the agent's.
func sandboxLabels(pod *v1.Pod) map[string]string {
	labels := withoutReservedKeys(pod.Labels)
	labels[LabelPodName] = pod.Name
	labels[LabelPodNamespace] = pod.Namespace
	labels[LabelPodUID] = string(pod.UID)
	labels[LabelAgent] = "true"
	return labels
}

// sandboxAnnotations are the pod's annotations (berth's own keys left
// out) plus the agent's state.
func sandboxAnnotations(pod *v1.Pod, refs SourceRefs, opts SandboxOptions) (map[string]string, error) {
	podJSON, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	refsJSON, err := json.Marshal(refs)
	if err != nil {
		return nil, fmt.Errorf("encode source refs: %w", err)
	}
	annotations := withoutReservedKeys(pod.Annotations)
	annotations[AnnotationPod] = string(podJSON)
	annotations[AnnotationSourceRefs] = string(refsJSON)
	annotations[AnnotationConfigSource] = opts.ConfigSource
	if annotations[AnnotationConfigSource] == "" {
		annotations[AnnotationConfigSource] = "file"
	}
	if !opts.ConfigSeen.IsZero() {
		annotations[AnnotationConfigSeen] = opts.ConfigSeen.UTC().Format(time.RFC3339Nano)
	}
	return annotations, nil
}

func containerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	return map[string]string{
		LabelPodName:       pod.Name,
		LabelPodNamespace:  pod.Namespace,
		LabelPodUID:        string(pod.UID),
		LabelContainerName: c.Name,
		LabelAgent:         "true",
	}
}

// CDIAnnotationPrefix marks a pod annotation naming Container Device
// Interface devices (vendor.com/class=name, comma-separated): the agent
// passes each to every container of the pod, as a device plugin's
// annotations reach kubelet's containers; the runtime resolves them.
const CDIAnnotationPrefix = "cdi.k8s.io/"

func containerAnnotations(pod *v1.Pod, c *v1.Container, typ ContainerType, restartCount int) (map[string]string, error) {
	annotations := map[string]string{
		AnnotationContainerHash:            ContainerHash(c),
		AnnotationRestartCount:             strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
		AnnotationContainerType:            string(typ),
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, CDIAnnotationPrefix) {
			annotations[k] = v
		}
	}
	if len(c.Ports) > 0 {
		ports, err := json.Marshal(c.Ports)
		if err != nil {
			return nil, fmt.Errorf("encode ports: %w", err)
		}
		annotations[AnnotationContainerPorts] = string(ports)
	}
	return annotations, nil
}
