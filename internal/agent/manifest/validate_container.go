package manifest

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateContainers checks the regular containers: at least one, unique
// names, and their restartPolicy and restartPolicyRules.
func validateContainers(pod *podContext, path *field.Path) field.ErrorList {
	containers := pod.spec.Containers
	if len(containers) == 0 {
		return field.ErrorList{field.Required(path, "a pod needs at least one container")}
	}
	var errs field.ErrorList
	names, hostPorts := map[string]bool{}, map[string]bool{}
	for i := range containers {
		c, containerPath := &containers[i], path.Index(i)
		errs = append(errs, validateContainer(pod, c, containerPath)...)
		if names[c.Name] {
			errs = append(errs, field.Duplicate(containerPath.Child("name"), c.Name))
		}
		names[c.Name] = true
		errs = append(errs, validateProbesAndHooks(pod, c, containerPath)...)
		errs = append(errs, validateContainerRestartPolicy(c, containerPath)...)
		errs = append(errs, hostPortConflicts(c, containerPath, hostPorts)...)
	}
	return errs
}

// validateInitContainers checks the init containers: names unique across
// init and regular containers; restartPolicy and restartPolicyRules; hooks
// and probes only on sidecars (restartPolicy Always). Init containers run one at a time, so their
// host ports are checked one container at a time.
func validateInitContainers(pod *podContext, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for _, c := range pod.spec.Containers {
		names[c.Name] = true
	}
	for i := range pod.spec.InitContainers {
		c, containerPath := &pod.spec.InitContainers[i], path.Index(i)
		errs = append(errs, validateContainer(pod, c, containerPath)...)
		errs = append(errs, validateInitRestartPolicy(c, containerPath)...)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		if names[c.Name] {
			errs = append(errs, field.Duplicate(containerPath.Child("name"), c.Name))
		} else if c.Name != "" {
			names[c.Name] = true
		}
		errs = append(errs, hostPortConflicts(c, containerPath, map[string]bool{})...)
		if sidecar {
			errs = append(errs, validateProbesAndHooks(pod, c, containerPath)...)
		} else {
			errs = append(errs, forbidOnInitContainer(c, containerPath)...)
		}
	}
	return errs
}

func forbidOnInitContainer(c *v1.Container, path *field.Path) field.ErrorList {
	const why = "may not be set for init containers without restartPolicy=Always"
	var errs field.ErrorList
	if c.Lifecycle != nil {
		errs = append(errs, field.Forbidden(path.Child("lifecycle"), why))
	}
	if c.LivenessProbe != nil {
		errs = append(errs, field.Forbidden(path.Child("livenessProbe"), why))
	}
	if c.ReadinessProbe != nil {
		errs = append(errs, field.Forbidden(path.Child("readinessProbe"), why))
	}
	if c.StartupProbe != nil {
		errs = append(errs, field.Forbidden(path.Child("startupProbe"), why))
	}
	return errs
}

// validateContainer applies the checks common to init and regular containers.
func validateContainer(pod *podContext, c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		errs = append(errs, invalidEach(path.Child("name"), c.Name, validation.IsDNS1123Label(c.Name))...)
	}
	switch {
	case c.Image == "":
		errs = append(errs, field.Required(path.Child("image"), ""))
	case strings.TrimSpace(c.Image) != c.Image:
		errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, validateEnum(path.Child("imagePullPolicy"), c.ImagePullPolicy, v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)...)
	errs = append(errs, validateEnum(path.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
		v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError)...)
	errs = append(errs, validateContainerPorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateEnv(pod, c.Env, path.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(pod, c, path.Child("volumeMounts"))...)
	if len(c.VolumeDevices) > 0 {
		errs = append(errs, field.Forbidden(path.Child("volumeDevices"), "block volumes need a PersistentVolumeClaim, which berth does not have"))
	}
	errs = append(errs, validateResources(&c.Resources, path.Child("resources"))...)
	errs = append(errs, validateContainerSecurityContext(c, path.Child("securityContext"))...)
	errs = append(errs, validateContainerHostUsers(pod.spec, c, path)...)
	return errs
}

var supportedProtocols = []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP}

// validateContainerPorts checks port numbers, protocols, and that port
// names are unique IANA service names.
func validateContainerPorts(ports []v1.ContainerPort, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for i, port := range ports {
		portPath := path.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				errs = append(errs, invalidEach(portPath.Child("name"), port.Name, msgs)...)
			} else if names[port.Name] {
				errs = append(errs, field.Duplicate(portPath.Child("name"), port.Name))
			}
			names[port.Name] = true
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(portPath.Child("containerPort"), ""))
		} else {
			errs = append(errs, invalidEach(portPath.Child("containerPort"), port.ContainerPort, validation.IsValidPortNum(int(port.ContainerPort)))...)
		}
		if port.HostPort != 0 {
			errs = append(errs, invalidEach(portPath.Child("hostPort"), port.HostPort, validation.IsValidPortNum(int(port.HostPort)))...)
		}
		errs = append(errs, validateEnum(portPath.Child("protocol"), port.Protocol, supportedProtocols...)...)
	}
	return errs
}

// hostPortConflicts reports the host ports of container c that a port
// already in seen binds (same protocol, host IP and port), and adds c's.
func hostPortConflicts(c *v1.Container, containerPath *field.Path, seen map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for j, port := range c.Ports {
		if port.HostPort == 0 {
			continue
		}
		key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
		if seen[key] {
			errs = append(errs, field.Duplicate(containerPath.Child("ports").Index(j).Child("hostPort"), key))
		}
		seen[key] = true
	}
	return errs
}
