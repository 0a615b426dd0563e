package podspec

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Sources are the ConfigMaps and Secrets a pod refers to, all in the pod's
// namespace. The agent keeps them in its own store (package sourcestore)
// so it can recreate containers after a restart without the original
// files; the sandbox carries only their SourceRefs.
type Sources struct {
	ConfigMaps []v1.ConfigMap `json:"configMaps,omitempty"`
	Secrets    []v1.Secret    `json:"secrets,omitempty"`
}

// SourceRefs name a pod's Sources, each with a digest of its content,
// for AnnotationSourceRefs: what recovery needs to find the sources again
// and check them, and nothing of their content.
type SourceRefs struct {
	ConfigMaps []SourceRef `json:"configMaps,omitempty"`
	Secrets    []SourceRef `json:"secrets,omitempty"`
}

// SourceRef is one ConfigMap or Secret of a pod.
type SourceRef struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// Empty reports whether the pod refers to no ConfigMap or Secret.
func (r SourceRefs) Empty() bool { return len(r.ConfigMaps)+len(r.Secrets) == 0 }

// ConfigMap returns the ConfigMap with this name.
func (s Sources) ConfigMap(name string) (*v1.ConfigMap, bool) {
	for i := range s.ConfigMaps {
		if s.ConfigMaps[i].Name == name {
			return &s.ConfigMaps[i], true
		}
	}
	return nil, false
}

// Secret returns the Secret with this name.
func (s Sources) Secret(name string) (*v1.Secret, bool) {
	for i := range s.Secrets {
		if s.Secrets[i].Name == name {
			return &s.Secrets[i], true
		}
	}
	return nil, false
}

// SecretData is a Secret's data with stringData folded in (stringData wins),
// which the API server does on write and a manifest on disk may not have had
// done to it.
func SecretData(s *v1.Secret) map[string][]byte {
	if len(s.StringData) == 0 {
		return s.Data
	}
	data := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return data
}

// ReferencedSources picks, from everything the agent holds, the ConfigMaps
// and Secrets in the pod's namespace that the pod refers to: env, envFrom
// (all container kinds), configMap / secret / projected volumes and
// imagePullSecrets. An object with no namespace counts as "default".
func ReferencedSources(pod *v1.Pod, configMaps []v1.ConfigMap, secrets []v1.Secret) Sources {
	cmNames, secretNames := ReferencedNames(pod)
	ns := namespaceOrDefault(pod.Namespace)
	var out Sources
	for _, cm := range configMaps {
		if namespaceOrDefault(cm.Namespace) == ns && slices.Contains(cmNames, cm.Name) {
			out.ConfigMaps = append(out.ConfigMaps, cm)
		}
	}
	for _, s := range secrets {
		if namespaceOrDefault(s.Namespace) == ns && slices.Contains(secretNames, s.Name) {
			out.Secrets = append(out.Secrets, s)
		}
	}
	return out
}

// ReferencedNames lists, sorted and without repeats, the names of the
// ConfigMaps and Secrets the pod refers to.
func ReferencedNames(pod *v1.Pod) (configMaps, secrets []string) {
	r := &nameCollector{}
	forEachContainer(pod, func(c *v1.Container) { r.container(c) })
	for i := range pod.Spec.Volumes {
		r.volume(&pod.Spec.Volumes[i].VolumeSource)
	}
	for _, ref := range pod.Spec.ImagePullSecrets {
		r.secret(ref.Name)
	}
	slices.Sort(r.configMaps)
	slices.Sort(r.secrets)
	return slices.Compact(r.configMaps), slices.Compact(r.secrets)
}

type nameCollector struct{ configMaps, secrets []string }

func (r *nameCollector) configMap(name string) {
	if name != "" {
		r.configMaps = append(r.configMaps, name)
	}
}

func (r *nameCollector) secret(name string) {
	if name != "" {
		r.secrets = append(r.secrets, name)
	}
}

func (r *nameCollector) container(c *v1.Container) {
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			r.configMap(from.ConfigMapRef.Name)
		}
		if from.SecretRef != nil {
			r.secret(from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if e.ValueFrom.ConfigMapKeyRef != nil {
			r.configMap(e.ValueFrom.ConfigMapKeyRef.Name)
		}
		if e.ValueFrom.SecretKeyRef != nil {
			r.secret(e.ValueFrom.SecretKeyRef.Name)
		}
	}
}

func (r *nameCollector) volume(v *v1.VolumeSource) {
	if v.ConfigMap != nil {
		r.configMap(v.ConfigMap.Name)
	}
	if v.Secret != nil {
		r.secret(v.Secret.SecretName)
	}
	if v.Projected == nil {
		return
	}
	for _, p := range v.Projected.Sources {
		if p.ConfigMap != nil {
			r.configMap(p.ConfigMap.Name)
		}
		if p.Secret != nil {
			r.secret(p.Secret.Name)
		}
	}
}

// forEachContainer visits init, regular and ephemeral containers in order.
func forEachContainer(pod *v1.Pod, visit func(*v1.Container)) {
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		visit((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

func namespaceOrDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// Empty reports whether s holds no ConfigMap or Secret.
func (s Sources) Empty() bool { return len(s.ConfigMaps)+len(s.Secrets) == 0 }
