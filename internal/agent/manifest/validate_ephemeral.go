package manifest

import (
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SetEphemeralDefaults applies the API server's container defaults to
// ephemeral containers (pull policy, termination message path and policy,
// port protocols, env fieldRef apiVersion), as on an update of a pod's
// ephemeralcontainers subresource.
func SetEphemeralDefaults(containers []v1.EphemeralContainer) {
	for i := range containers {
		setContainerDefaults((*v1.Container)(&containers[i].EphemeralContainerCommon))
	}
}

// ValidateEphemeralContainersUpdate checks a new list of a running pod's
// ephemeral containers as the API server checks an update of the
// ephemeralcontainers subresource: the ones the pod has must all still be
// there, unchanged (they can only be added, never changed or removed); each
// new one is validated as a container, with a name unique among all of
// the pod's containers, without ports, probes, lifecycle hooks, resources,
// a restart policy or rules or subPath mounts, and a targetContainerName (if any)
// that names one of the pod's init or regular containers. The error is an
// *InvalidError whose problems name the pod and the field.
func ValidateEphemeralContainersUpdate(pod *v1.Pod, updated []v1.EphemeralContainer) error {
	path := field.NewPath("spec", "ephemeralContainers")
	errs := validateEphemeralKept(pod.Spec.EphemeralContainers, updated, path)
	errs = append(errs, validateEphemeralContainers(pod, updated, path)...)
	return invalid(fieldProblems("", objectName(kindPod, &pod.ObjectMeta), errs))
}

// validateEphemeralKept refuses removing or changing an ephemeral container
// the pod has.
func validateEphemeralKept(old, updated []v1.EphemeralContainer, path *field.Path) field.ErrorList {
	byName := make(map[string]*v1.EphemeralContainer, len(updated))
	for i := range updated {
		byName[updated[i].Name] = &updated[i]
	}
	var errs field.ErrorList
	for i := range old {
		now, found := byName[old[i].Name]
		switch {
		case !found:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be removed", old[i].Name)))
		case !reflect.DeepEqual(&old[i], now):
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be changed", old[i].Name)))
		}
	}
	return errs
}

// validateEphemeralContainers validates every ephemeral container of the
// list against the pod's other containers and volumes.
func validateEphemeralContainers(pod *v1.Pod, list []v1.EphemeralContainer, path *field.Path) field.ErrorList {
	ctx := &podContext{spec: &pod.Spec, containerNames: map[string]bool{}}
	for _, c := range append(containerPointers(pod.Spec.InitContainers), containerPointers(pod.Spec.Containers)...) {
		ctx.containerNames[c.Name] = true
	}
	ctx.volumes, _ = validateVolumes(pod.Spec.Volumes, ctx.containerNames, field.NewPath("spec", "volumes")) // the pod's volumes were validated on create
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range list {
		ec, ecPath := &list[i], path.Index(i)
		c := (*v1.Container)(&ec.EphemeralContainerCommon)
		errs = append(errs, validateContainer(ctx, c, ecPath)...)
		if ctx.containerNames[c.Name] || seen[c.Name] {
			errs = append(errs, field.Duplicate(ecPath.Child("name"), c.Name))
		}
		seen[c.Name] = true
		if ec.TargetContainerName != "" && !ctx.containerNames[ec.TargetContainerName] {
			errs = append(errs, field.NotFound(ecPath.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, forbidOnEphemeral(c, ecPath)...)
	}
	return errs
}

// forbidOnEphemeral refuses the fields the API server does not allow on
// an ephemeral container.
func forbidOnEphemeral(c *v1.Container, path *field.Path) field.ErrorList {
	const why = "cannot be set for an Ephemeral Container"
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"ports", len(c.Ports) > 0},
		{"livenessProbe", c.LivenessProbe != nil},
		{"readinessProbe", c.ReadinessProbe != nil},
		{"startupProbe", c.StartupProbe != nil},
		{"lifecycle", c.Lifecycle != nil},
		{"resources", len(c.Resources.Limits)+len(c.Resources.Requests)+len(c.Resources.Claims) > 0},
		{"resizePolicy", len(c.ResizePolicy) > 0},
		{"restartPolicy", c.RestartPolicy != nil},
		{"restartPolicyRules", len(c.RestartPolicyRules) > 0},
	} {
		if f.set {
			errs = append(errs, field.Forbidden(path.Child(f.name), why))
		}
	}
	for i, m := range c.VolumeMounts {
		if m.SubPath != "" || m.SubPathExpr != "" {
			errs = append(errs, field.Forbidden(path.Child("volumeMounts").Index(i).Child("subPath"), why))
		}
	}
	return errs
}
