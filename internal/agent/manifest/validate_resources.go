package manifest

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateResources checks a container's requests and limits: resource
// names, non-negative quantities (whole numbers for extended resources), and
// requests no larger than limits; resources that cannot be overcommitted
// (huge pages, extended resources) need a limit equal to the request.
func validateResources(resources *v1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limitsPath, requestsPath := path.Child("limits"), path.Child("requests")
	cpuOrMemory, hugePages := false, false
	note := func(name v1.ResourceName) {
		cpuOrMemory = cpuOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
		hugePages = hugePages || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
	}
	for _, name := range sortedKeys(resources.Limits) {
		errs = append(errs, validateResourceQuantity(name, resources.Limits[name], limitsPath.Key(string(name)))...)
		note(name)
	}
	for _, name := range sortedKeys(resources.Requests) {
		request, requestPath := resources.Requests[name], requestsPath.Key(string(name))
		errs = append(errs, validateResourceQuantity(name, request, requestPath)...)
		note(name)
		limit, limited := resources.Limits[name]
		switch {
		case !limited && !overcommitAllowed(name):
			errs = append(errs, field.Required(limitsPath.Key(string(name)), "Limit must be set for non overcommitable resources"))
		case !limited:
		case !overcommitAllowed(name) && request.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(requestPath, request.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case request.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(requestPath, request.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(path, "HugePages require cpu or memory"))
	}
	if len(resources.Claims) > 0 {
		errs = append(errs, field.Forbidden(path.Child("claims"), "dynamic resource allocation is not supported"))
	}
	return errs
}

// validateResourceQuantity checks a resource's name and quantity.
func validateResourceQuantity(name v1.ResourceName, quantity resource.Quantity, path *field.Path) field.ErrorList {
	errs := validateContainerResourceName(name, path)
	if quantity.Sign() < 0 {
		errs = append(errs, field.Invalid(path, quantity.String(), "must be greater than or equal to 0"))
	}
	if extendedResource(name) && quantity.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(path, quantity.String(), "must be an integer"))
	}
	return errs
}

// validateContainerResourceName accepts cpu, memory, ephemeral-storage,
// hugepages-<size>, names under kubernetes.io/, and extended resources
// (domain/name).
func validateContainerResourceName(name v1.ResourceName, path *field.Path) field.ErrorList {
	if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
		return invalidEach(path, name, msgs)
	}
	if !strings.Contains(string(name), "/") {
		switch {
		case name == v1.ResourceCPU, name == v1.ResourceMemory, name == v1.ResourceEphemeralStorage:
		case strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix):
		default:
			return field.ErrorList{field.Invalid(path, name, "must be a standard resource for containers")}
		}
		return nil
	}
	if !nativeResource(name) && !extendedResource(name) {
		return field.ErrorList{field.Invalid(path, name, "doesn't follow extended resource name standard")}
	}
	return nil
}

// nativeResource: a resource Kubernetes itself defines.
func nativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix)
}

// extendedResource: a device plugin's resource, such as example.com/gpu.
func extendedResource(name v1.ResourceName) bool {
	if nativeResource(name) || strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// overcommitAllowed: requests may be below limits for native resources
// other than huge pages.
func overcommitAllowed(name v1.ResourceName) bool {
	return nativeResource(name) && !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}
