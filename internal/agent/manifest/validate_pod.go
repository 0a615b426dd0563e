package manifest

import (
	"fmt"
	"math"
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podContext is what container validation needs to know about its pod.
type podContext struct {
	spec *v1.PodSpec
	// volumes holds the pod's valid volumes by name.
	volumes map[string]*v1.VolumeSource
	// containerNames holds the names of init and regular containers.
	containerNames map[string]bool
}

func validatePodSpec(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	errs := validateGracePeriod(spec.TerminationGracePeriodSeconds, path.Child("terminationGracePeriodSeconds"))
	pod := &podContext{spec: spec, containerNames: map[string]bool{}}
	for _, c := range append(containerPointers(spec.InitContainers), containerPointers(spec.Containers)...) {
		pod.containerNames[c.Name] = true
	}
	volumes, volumeErrs := validateVolumes(spec.Volumes, pod.containerNames, path.Child("volumes"))
	errs = append(errs, volumeErrs...)
	pod.volumes = volumes
	errs = append(errs, validateContainers(pod, path.Child("containers"))...)
	errs = append(errs, validateInitContainers(pod, path.Child("initContainers"))...)
	if len(spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("ephemeralContainers"), "cannot be set on create"))
	}
	errs = append(errs, validateHostNetworkPorts(spec, path)...)
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, path.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(spec.DNSPolicy, path.Child("dnsPolicy"))...)
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, path.Child("dnsConfig"))...)
	errs = append(errs, validateLabelMap(spec.NodeSelector, path.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, path)...)
	errs = append(errs, validateHostUsers(spec, path)...)
	errs = append(errs, validatePodNames(spec, path)...)
	errs = append(errs, validateHostAliases(spec.HostAliases, path.Child("hostAliases"))...)
	errs = append(errs, validatePodOS(spec.OS, path.Child("os"))...)
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	return errs
}

func validateGracePeriod(seconds *int64, path *field.Path) field.ErrorList {
	switch {
	case seconds == nil:
		return field.ErrorList{field.Required(path, "")}
	case *seconds < 0:
		return field.ErrorList{field.Invalid(path, *seconds, "must be greater than or equal to 0")}
	}
	return nil
}

func validateRestartPolicy(policy v1.RestartPolicy, path *field.Path) field.ErrorList {
	return validateEnum(path, policy, v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever)
}

func validateDNSPolicy(policy v1.DNSPolicy, path *field.Path) field.ErrorList {
	return validateEnum(path, policy, v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone)
}

// validateEnum requires value to be one of supported.
func validateEnum[T ~string](path *field.Path, value T, supported ...T) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	for _, s := range supported {
		if value == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, value, supported)}
}

// Limits of the resolver that reads the pod's resolv.conf.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validateDNSConfig(config *v1.PodDNSConfig, policy v1.DNSPolicy, path *field.Path) field.ErrorList {
	if policy == v1.DNSNone {
		if config == nil {
			return field.ErrorList{field.Required(path, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(config.Nameservers) == 0 {
			return field.ErrorList{field.Required(path.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if config == nil {
		return nil
	}
	var errs field.ErrorList
	if len(config.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(path.Child("nameservers"), config.Nameservers, fmt.Sprintf("must not have more than %d nameservers", maxDNSNameservers)))
	}
	for i, server := range config.Nameservers {
		if _, err := netip.ParseAddr(server); err != nil {
			errs = append(errs, field.Invalid(path.Child("nameservers").Index(i), server, "must be a valid IP address"))
		}
	}
	if len(config.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(path.Child("searches"), config.Searches, fmt.Sprintf("must not have more than %d search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(config.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(path.Child("searches"), config.Searches, fmt.Sprintf("must not have more than %d characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range config.Searches {
		if search != "." {
			trimmed := strings.TrimSuffix(search, ".")
			errs = append(errs, invalidEach(path.Child("searches").Index(i), search, validation.IsDNS1123SubdomainWithUnderscore(trimmed))...)
		}
	}
	for i, option := range config.Options {
		if option.Name == "" {
			errs = append(errs, field.Required(path.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// validateHostNetworkPorts: a host-network pod's container ports are host
// ports, so an explicit hostPort must be the containerPort.
func validateHostNetworkPorts(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var errs field.ErrorList
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			if port.HostPort != port.ContainerPort {
				portPath := path.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort")
				errs = append(errs, field.Invalid(portPath, port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return errs
}

// validatePodNames checks the pod spec's fields that name other things.
func validatePodNames(spec *v1.PodSpec, path *field.Path) field.ErrorList {
	runtimeClassName := ""
	if spec.RuntimeClassName != nil {
		runtimeClassName = *spec.RuntimeClassName
	}
	names := []struct {
		field, value string
		check        func(string) []string
	}{
		{"serviceAccountName", spec.ServiceAccountName, validation.IsDNS1123Subdomain},
		{"nodeName", spec.NodeName, validation.IsDNS1123Subdomain},
		{"priorityClassName", spec.PriorityClassName, validation.IsDNS1123Subdomain},
		{"runtimeClassName", runtimeClassName, validation.IsDNS1123Subdomain},
		{"hostname", spec.Hostname, validation.IsDNS1123Label},
		{"subdomain", spec.Subdomain, validation.IsDNS1123Label},
	}
	var errs field.ErrorList
	for _, name := range names {
		if name.value != "" {
			errs = append(errs, invalidEach(path.Child(name.field), name.value, name.check(name.value))...)
		}
	}
	return errs
}

func validateHostAliases(aliases []v1.HostAlias, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, alias := range aliases {
		aliasPath := path.Index(i)
		if _, err := netip.ParseAddr(alias.IP); err != nil {
			errs = append(errs, field.Invalid(aliasPath.Child("ip"), alias.IP, "must be a valid IP address"))
		}
		for j, hostname := range alias.Hostnames {
			errs = append(errs, invalidEach(aliasPath.Child("hostnames").Index(j), hostname, validation.IsDNS1123Subdomain(hostname))...)
		}
	}
	return errs
}

// validatePodOS accepts only Linux pods: berth runs Linux containers.
func validatePodOS(os *v1.PodOS, path *field.Path) field.ErrorList {
	if os == nil {
		return nil
	}
	return validateEnum(path.Child("name"), os.Name, v1.Linux)
}

// hostPortClaims records the host ports the pods of a bundle use, by
// "protocol/port", to find two pods that would bind the same one.
type hostPortClaims map[string][]hostPortClaim

type hostPortClaim struct {
	ip  string
	pod string
}

// claim records pod's host ports and reports each one that an earlier pod
// already holds on an overlapping address.
func (claims hostPortClaims) claim(pod *v1.Pod, podName string) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	lists := []struct {
		path       *field.Path
		containers []v1.Container
	}{{spec.Child("initContainers"), pod.Spec.InitContainers}, {spec.Child("containers"), pod.Spec.Containers}}
	for _, list := range lists {
		for i, c := range list.containers {
			for j, port := range c.Ports {
				if port.HostPort == 0 {
					continue
				}
				key := fmt.Sprintf("%s/%d", port.Protocol, port.HostPort)
				if holder := claims.holder(key, port.HostIP, podName); holder != "" {
					err := field.Duplicate(list.path.Index(i).Child("ports").Index(j).Child("hostPort"), key)
					err.Detail = "already used by " + holder
					errs = append(errs, err)
					continue
				}
				claims[key] = append(claims[key], hostPortClaim{ip: port.HostIP, pod: podName})
			}
		}
	}
	return errs
}

// holder names another pod that holds key on an address overlapping ip.
func (claims hostPortClaims) holder(key, ip, podName string) string {
	wildcard := func(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }
	for _, c := range claims[key] {
		if c.pod != podName && (c.ip == ip || wildcard(c.ip) || wildcard(ip)) {
			return c.pod
		}
	}
	return ""
}
