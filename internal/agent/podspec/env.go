package podspec

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// EnvVar is one resolved environment variable.
type EnvVar struct {
	Name, Value string
}

// Env is a container's resolved environment.
type Env struct {
	// Vars in a stable order: each name where it was first set (envFrom
	// sources in order, each source's keys sorted, then env entries in
	// order), with the value of the last setting. The kubelet's order is a
	// map's; the set of variables and their values are the kubelet's.
	Vars []EnvVar
	// SkippedKeys are envFrom keys (prefix applied) that are not usable as
	// variable names: empty, or with '=' or a byte outside printable ASCII.
	// The caller may report them as an event, as the kubelet used to.
	SkippedKeys []string
}

// Lookup finds a variable by name.
func (e Env) Lookup(name string) (string, bool) {
	for _, v := range e.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}

// ResolveEnv computes the container's environment as the kubelet does,
// without service links (there are no Services): envFrom first, then env
// entries overriding them. A value has its $(VAR) references expanded
// against the variables set before it; a valueFrom is resolved from the
// sources, the pod (fieldRef) or the container's resources
// (resourceFieldRef). A missing ConfigMap, Secret or key is an error naming
// the container and the variable, unless the reference is optional, in which
// case the variable (or the whole envFrom source) is left out.
func ResolveEnv(pod *v1.Pod, c *v1.Container, sources Sources, dw Downward) (Env, error) {
	env := &orderedEnv{values: map[string]string{}}
	var skipped []string
	for i, from := range c.EnvFrom {
		data, err := envFromData(from, sources)
		if err != nil {
			return Env{}, fmt.Errorf("container %q: envFrom[%d]: %w", c.Name, i, err)
		}
		for _, key := range sortedKeys(data) {
			name := from.Prefix + key
			if !usableEnvName(name) {
				skipped = append(skipped, name)
				continue
			}
			env.set(name, data[key])
		}
	}
	for _, e := range c.Env {
		value, set, err := envValue(pod, c, e, env.lookup, sources, dw)
		if err != nil {
			return Env{}, fmt.Errorf("container %q: env %q: %w", c.Name, e.Name, err)
		}
		if set {
			env.set(e.Name, value)
		}
	}
	return Env{Vars: env.list(), SkippedKeys: skipped}, nil
}

// envFromData returns the key/values of one envFrom source; a missing
// optional source gives none.
func envFromData(from v1.EnvFromSource, sources Sources) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		ref := from.ConfigMapRef
		cm, ok := sources.ConfigMap(ref.Name)
		if !ok {
			return nil, missingUnlessOptional(ref.Optional, "configMap %q not found", ref.Name)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		ref := from.SecretRef
		s, ok := sources.Secret(ref.Name)
		if !ok {
			return nil, missingUnlessOptional(ref.Optional, "secret %q not found", ref.Name)
		}
		data := map[string]string{}
		for k, v := range SecretData(s) {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

// envValue computes one env entry's value; set is false when an optional
// reference is missing and the variable is to be left out.
func envValue(pod *v1.Pod, c *v1.Container, e v1.EnvVar, lookup func(string) (string, bool), sources Sources, dw Downward) (value string, set bool, err error) {
	if e.Value != "" || e.ValueFrom == nil {
		return ExpandVars(e.Value, lookup), true, nil
	}
	from := e.ValueFrom
	switch {
	case from.FieldRef != nil:
		value, err = FieldRefValue(pod, from.FieldRef, dw)
	case from.ResourceFieldRef != nil:
		value, err = ResourceFieldRefValue(pod, c, from.ResourceFieldRef, dw.Allocatable)
	case from.ConfigMapKeyRef != nil:
		return configMapKeyValue(from.ConfigMapKeyRef, sources)
	case from.SecretKeyRef != nil:
		return secretKeyValue(from.SecretKeyRef, sources)
	case from.FileKeyRef != nil:
		err = fmt.Errorf("valueFrom.fileKeyRef is not supported")
	default:
		err = fmt.Errorf("valueFrom names no source")
	}
	return value, err == nil, err
}

func configMapKeyValue(ref *v1.ConfigMapKeySelector, sources Sources) (string, bool, error) {
	cm, ok := sources.ConfigMap(ref.Name)
	if !ok {
		return "", false, missingUnlessOptional(ref.Optional, "configMap %q not found", ref.Name)
	}
	value, ok := cm.Data[ref.Key]
	if !ok {
		return "", false, missingUnlessOptional(ref.Optional, "configMap %q has no key %q", ref.Name, ref.Key)
	}
	return value, true, nil
}

func secretKeyValue(ref *v1.SecretKeySelector, sources Sources) (string, bool, error) {
	s, ok := sources.Secret(ref.Name)
	if !ok {
		return "", false, missingUnlessOptional(ref.Optional, "secret %q not found", ref.Name)
	}
	value, ok := SecretData(s)[ref.Key]
	if !ok {
		return "", false, missingUnlessOptional(ref.Optional, "secret %q has no key %q", ref.Name, ref.Key)
	}
	return string(value), true, nil
}

// missingUnlessOptional is nil for an optional reference, else the error.
func missingUnlessOptional(optional *bool, format string, args ...any) error {
	if optional != nil && *optional {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// usableEnvName accepts what the API server's relaxed validation accepts:
// non-empty, printable ASCII, no '='.
func usableEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < ' ' || name[i] > '~' || name[i] == '=' {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// orderedEnv keeps variables in first-set order.
type orderedEnv struct {
	names  []string
	values map[string]string
}

func (e *orderedEnv) set(name, value string) {
	if _, ok := e.values[name]; !ok {
		e.names = append(e.names, name)
	}
	e.values[name] = value
}

func (e *orderedEnv) lookup(name string) (string, bool) {
	v, ok := e.values[name]
	return v, ok
}

func (e *orderedEnv) list() []EnvVar {
	out := make([]EnvVar, len(e.names))
	for i, n := range e.names {
		out[i] = EnvVar{Name: n, Value: e.values[n]}
	}
	return out
}
