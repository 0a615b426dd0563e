package manifest

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// refKind tells a ConfigMap reference from a Secret reference.
type refKind string

const (
	configMapRef refKind = kindConfigMap
	secretRef    refKind = kindSecret
)

// reference is one place where a pod names a ConfigMap or a Secret of its
// namespace, with the keys it needs from it (none: the whole object).
type reference struct {
	kind     refKind
	name     string
	optional bool
	namePath *field.Path
	keys     []keyUse
}

type keyUse struct {
	key  string
	path *field.Path
}

// validateReferences requires every non-optional reference of pod to name
// an object of the bundle that holds the keys asked for.
func (b *Bundle) validateReferences(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	for _, ref := range podReferencesOf(pod) {
		if ref.optional || ref.name == "" {
			continue
		}
		keys, found := b.objectKeys(ref.kind, pod.Namespace, ref.name)
		object := fmt.Sprintf("%s %s/%s", ref.kind, pod.Namespace, ref.name)
		if !found {
			err := field.NotFound(ref.namePath, ref.name)
			err.Detail = fmt.Sprintf("no %s in the manifests (mark the reference optional if it may be absent)", object)
			errs = append(errs, err)
			continue
		}
		for _, use := range ref.keys {
			if !keys[use.key] {
				err := field.NotFound(use.path, use.key)
				err.Detail = fmt.Sprintf("%s has no such key", object)
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// objectKeys returns the keys of the ConfigMap or Secret namespace/name.
func (b *Bundle) objectKeys(kind refKind, namespace, name string) (map[string]bool, bool) {
	keys := map[string]bool{}
	key := ObjectKey(namespace, name)
	if kind == configMapRef {
		cm, found := b.ConfigMaps[key]
		if found {
			for k := range cm.Data {
				keys[k] = true
			}
			for k := range cm.BinaryData {
				keys[k] = true
			}
		}
		return keys, found
	}
	s, found := b.Secrets[key]
	if found {
		for k := range s.Data {
			keys[k] = true
		}
	}
	return keys, found
}

// podReferences returns the names of the objects of one kind that pod
// refers to.
func podReferences(pod *v1.Pod, kind refKind) map[string]bool {
	names := map[string]bool{}
	for _, ref := range podReferencesOf(pod) {
		if ref.kind == kind && ref.name != "" {
			names[ref.name] = true
		}
	}
	return names
}

// podReferencesOf lists the references of pod's volumes and containers.
func podReferencesOf(pod *v1.Pod) []reference {
	spec := field.NewPath("spec")
	var refs []reference
	for i, vol := range pod.Spec.Volumes {
		refs = append(refs, volumeReferences(&vol.VolumeSource, spec.Child("volumes").Index(i))...)
	}
	lists := []struct {
		path       *field.Path
		containers []v1.Container
	}{{spec.Child("initContainers"), pod.Spec.InitContainers}, {spec.Child("containers"), pod.Spec.Containers}}
	for _, list := range lists {
		for i := range list.containers {
			refs = append(refs, containerReferences(&list.containers[i], list.path.Index(i))...)
		}
	}
	return refs
}

func volumeReferences(source *v1.VolumeSource, path *field.Path) []reference {
	var refs []reference
	if cm := source.ConfigMap; cm != nil {
		p := path.Child("configMap")
		refs = append(refs, reference{configMapRef, cm.Name, isTrue(cm.Optional), p.Child("name"), itemKeys(cm.Items, p)})
	}
	if s := source.Secret; s != nil {
		p := path.Child("secret")
		refs = append(refs, reference{secretRef, s.SecretName, isTrue(s.Optional), p.Child("secretName"), itemKeys(s.Items, p)})
	}
	if source.Projected == nil {
		return refs
	}
	for i, projection := range source.Projected.Sources {
		p := path.Child("projected", "sources").Index(i)
		if cm := projection.ConfigMap; cm != nil {
			refs = append(refs, reference{configMapRef, cm.Name, isTrue(cm.Optional), p.Child("configMap", "name"), itemKeys(cm.Items, p.Child("configMap"))})
		}
		if s := projection.Secret; s != nil {
			refs = append(refs, reference{secretRef, s.Name, isTrue(s.Optional), p.Child("secret", "name"), itemKeys(s.Items, p.Child("secret"))})
		}
	}
	return refs
}

func itemKeys(items []v1.KeyToPath, path *field.Path) []keyUse {
	var keys []keyUse
	for i, item := range items {
		keys = append(keys, keyUse{item.Key, path.Child("items").Index(i).Child("key")})
	}
	return keys
}

func containerReferences(c *v1.Container, path *field.Path) []reference {
	var refs []reference
	for i, env := range c.Env {
		if env.ValueFrom == nil {
			continue
		}
		p := path.Child("env").Index(i).Child("valueFrom")
		if ref := env.ValueFrom.ConfigMapKeyRef; ref != nil {
			keyPath := p.Child("configMapKeyRef")
			refs = append(refs, reference{configMapRef, ref.Name, isTrue(ref.Optional), keyPath.Child("name"), []keyUse{{ref.Key, keyPath.Child("key")}}})
		}
		if ref := env.ValueFrom.SecretKeyRef; ref != nil {
			keyPath := p.Child("secretKeyRef")
			refs = append(refs, reference{secretRef, ref.Name, isTrue(ref.Optional), keyPath.Child("name"), []keyUse{{ref.Key, keyPath.Child("key")}}})
		}
	}
	for i, from := range c.EnvFrom {
		p := path.Child("envFrom").Index(i)
		if ref := from.ConfigMapRef; ref != nil {
			refs = append(refs, reference{configMapRef, ref.Name, isTrue(ref.Optional), p.Child("configMapRef", "name"), nil})
		}
		if ref := from.SecretRef; ref != nil {
			refs = append(refs, reference{secretRef, ref.Name, isTrue(ref.Optional), p.Child("secretRef", "name"), nil})
		}
	}
	return refs
}

func isTrue(b *bool) bool { return b != nil && *b }
