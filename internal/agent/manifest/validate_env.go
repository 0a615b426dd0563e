package manifest

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The downward API fields a pod may expose, as env values and as volume
// files. Labels and annotations may also be subscripted: metadata.labels['k'].
var (
	envFieldPaths = []string{
		"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
	}
	volumeFieldPaths = []string{
		"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	}
	resourceFieldPaths = []string{
		"limits.cpu", "limits.ephemeral-storage", "limits.memory",
		"requests.cpu", "requests.ephemeral-storage", "requests.memory",
	}
	hugePagesFieldPrefixes = []string{"limits.hugepages-", "requests.hugepages-"}
)

// validateEnv checks env names (any printable ASCII but '=', the API's
// relaxed rule) and that each valueFrom has exactly one source and no value.
func validateEnv(pod *podContext, vars []v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, env := range vars {
		envPath := path.Index(i)
		if env.Name == "" {
			errs = append(errs, field.Required(envPath.Child("name"), ""))
		} else {
			errs = append(errs, invalidEach(envPath.Child("name"), env.Name, validation.IsRelaxedEnvVarName(env.Name))...)
		}
		if env.ValueFrom != nil {
			errs = append(errs, validateEnvSource(pod, env, envPath.Child("valueFrom"))...)
		}
	}
	return errs
}

func validateEnvSource(pod *podContext, env v1.EnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	from := env.ValueFrom
	sources := 0
	if from.FieldRef != nil {
		sources++
		errs = append(errs, validateFieldSelector(from.FieldRef, envFieldPaths, path.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		sources++
		errs = append(errs, validateResourceFieldSelector(pod.containerNames, from.ResourceFieldRef, false, path.Child("resourceFieldRef"))...)
	}
	if ref := from.ConfigMapKeyRef; ref != nil {
		sources++
		errs = append(errs, validateKeySelector(ref.Name, ref.Key, path.Child("configMapKeyRef"))...)
	}
	if ref := from.SecretKeyRef; ref != nil {
		sources++
		errs = append(errs, validateKeySelector(ref.Name, ref.Key, path.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		sources++
		errs = append(errs, field.Forbidden(path.Child("fileKeyRef"), "not supported (the EnvFiles feature is disabled)"))
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case env.Value != "":
		errs = append(errs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		errs = append(errs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return errs
}

// validateKeySelector checks a ConfigMap or Secret key reference's form;
// whether the object and key exist is checked against the bundle.
func validateKeySelector(name, key string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		errs = append(errs, invalidEach(path.Child("name"), name, validation.IsDNS1123Subdomain(name))...)
	}
	if key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	} else {
		errs = append(errs, invalidEach(path.Child("key"), key, validation.IsConfigMapKey(key))...)
	}
	return errs
}

// validateFieldSelector checks a downward API field reference against the
// supported paths.
func validateFieldSelector(selector *v1.ObjectFieldSelector, supported []string, path *field.Path) field.ErrorList {
	switch {
	case selector.APIVersion == "":
		return field.ErrorList{field.Required(path.Child("apiVersion"), "")}
	case selector.APIVersion != "v1":
		return field.ErrorList{field.NotSupported(path.Child("apiVersion"), selector.APIVersion, []string{"v1"})}
	case selector.FieldPath == "":
		return field.ErrorList{field.Required(path.Child("fieldPath"), "")}
	}
	fieldPath := path.Child("fieldPath")
	if base, key, subscripted := splitSubscript(selector.FieldPath); subscripted {
		switch base {
		case "metadata.labels":
			return invalidEach(fieldPath, key, validation.IsQualifiedName(key))
		case "metadata.annotations":
			return invalidEach(fieldPath, key, validation.IsQualifiedName(strings.ToLower(key)))
		}
		return field.ErrorList{field.Invalid(fieldPath, base, "does not support subscript")}
	}
	if !slices.Contains(supported, selector.FieldPath) {
		return field.ErrorList{field.NotSupported(fieldPath, selector.FieldPath, supported)}
	}
	return nil
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(fieldPath string) (base, key string, subscripted bool) {
	open := strings.Index(fieldPath, "['")
	if open < 0 || !strings.HasSuffix(fieldPath, "']") || open+2 > len(fieldPath)-2 {
		return fieldPath, "", false
	}
	return fieldPath[:open], fieldPath[open+2 : len(fieldPath)-2], true
}

// validateResourceFieldSelector checks a reference to a container's
// resources. A volume file must name the container; env may leave it to
// mean its own container. A named container must exist.
func validateResourceFieldSelector(containerNames map[string]bool, selector *v1.ResourceFieldSelector, inVolume bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case selector.ContainerName == "" && inVolume:
		errs = append(errs, field.Required(path.Child("containerName"), ""))
	case selector.ContainerName != "" && !containerNames[selector.ContainerName]:
		errs = append(errs, field.NotFound(path.Child("containerName"), selector.ContainerName))
	}
	hugePages := slices.ContainsFunc(hugePagesFieldPrefixes, func(prefix string) bool { return strings.HasPrefix(selector.Resource, prefix) })
	switch {
	case selector.Resource == "":
		errs = append(errs, field.Required(path.Child("resource"), ""))
	case !hugePages && !slices.Contains(resourceFieldPaths, selector.Resource):
		errs = append(errs, field.NotSupported(path.Child("resource"), selector.Resource, resourceFieldPaths))
	}
	return append(errs, validateDivisor(selector, hugePages, path.Child("divisor"))...)
}

var (
	cpuDivisors    = []string{"1m", "1"}
	memoryDivisors = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
)

func validateDivisor(selector *v1.ResourceFieldSelector, hugePages bool, path *field.Path) field.ErrorList {
	if selector.Divisor.IsZero() {
		return nil
	}
	allowed := memoryDivisors
	if strings.HasSuffix(selector.Resource, ".cpu") {
		allowed = cpuDivisors
	} else if !hugePages && !strings.HasSuffix(selector.Resource, ".memory") && !strings.HasSuffix(selector.Resource, ".ephemeral-storage") {
		return nil
	}
	if divisor := selector.Divisor.String(); !slices.Contains(allowed, divisor) {
		return field.ErrorList{field.Invalid(path, divisor, fmt.Sprintf("must be one of %s for %s", strings.Join(allowed, ", "), selector.Resource))}
	}
	return nil
}

// validateEnvFrom checks that each envFrom names exactly one ConfigMap or
// Secret and that its prefix is a valid variable name.
func validateEnvFrom(sources []v1.EnvFromSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, source := range sources {
		sourcePath := path.Index(i)
		if source.Prefix != "" {
			errs = append(errs, invalidEach(sourcePath.Child("prefix"), source.Prefix, validation.IsRelaxedEnvVarName(source.Prefix))...)
		}
		names := map[string]string{}
		if source.ConfigMapRef != nil {
			names["configMapRef"] = source.ConfigMapRef.Name
		}
		if source.SecretRef != nil {
			names["secretRef"] = source.SecretRef.Name
		}
		for _, kind := range sortedKeys(names) {
			namePath := sourcePath.Child(kind, "name")
			if names[kind] == "" {
				errs = append(errs, field.Required(namePath, ""))
			} else {
				errs = append(errs, invalidEach(namePath, names[kind], validation.IsDNS1123Subdomain(names[kind]))...)
			}
		}
		switch len(names) {
		case 0:
			errs = append(errs, field.Invalid(sourcePath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case 2:
			errs = append(errs, field.Invalid(sourcePath, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}
