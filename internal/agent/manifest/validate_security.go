package manifest

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedProcMounts       = []v1.ProcMountType{v1.DefaultProcMount, v1.UnmaskedProcMount}
	supportedSeccompTypes     = []v1.SeccompProfileType{v1.SeccompProfileTypeRuntimeDefault, v1.SeccompProfileTypeUnconfined, v1.SeccompProfileTypeLocalhost}
	supportedAppArmorTypes    = []v1.AppArmorProfileType{v1.AppArmorProfileTypeRuntimeDefault, v1.AppArmorProfileTypeUnconfined, v1.AppArmorProfileTypeLocalhost}
	supportedFSGroupPolicies  = []v1.PodFSGroupChangePolicy{v1.FSGroupChangeOnRootMismatch, v1.FSGroupChangeAlways}
	supportedSupplementalMode = []v1.SupplementalGroupsPolicy{v1.SupplementalGroupsPolicyMerge, v1.SupplementalGroupsPolicyStrict}
)

// validateContainerSecurityContext checks user and group ids, profiles, and
// that privilege escalation is not both forbidden and implied.
func validateContainerSecurityContext(c *v1.Container, path *field.Path) field.ErrorList {
	sc := c.SecurityContext
	if sc == nil {
		return nil
	}
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, path)
	if sc.ProcMount != nil {
		errs = append(errs, validateEnum(path.Child("procMount"), *sc.ProcMount, supportedProcMounts...)...)
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, path.Child("appArmorProfile"))...)
	if sc.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(path.Child("windowsOptions"), "windows options cannot be set for a linux pod"))
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		return errs
	}
	if sc.Privileged != nil && *sc.Privileged {
		errs = append(errs, field.Invalid(path, "", "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
	}
	if sc.Capabilities != nil && slices.ContainsFunc(sc.Capabilities.Add, func(c v1.Capability) bool { return c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN" }) {
		errs = append(errs, field.Invalid(path, "", "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
	}
	return errs
}

// validatePodSecurityContext checks the pod-level security context and the
// host namespaces it may not combine with a user namespace.
func validatePodSecurityContext(spec *v1.PodSpec, specPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	path := specPath.Child("securityContext")
	errs := validateIDs(sc.RunAsUser, sc.RunAsGroup, path)
	if sc.FSGroup != nil {
		errs = append(errs, invalidEach(path.Child("fsGroup"), *sc.FSGroup, validation.IsValidGroupID(*sc.FSGroup))...)
	}
	for i, gid := range sc.SupplementalGroups {
		errs = append(errs, invalidEach(path.Child("supplementalGroups").Index(i), gid, validation.IsValidGroupID(gid))...)
	}
	if sc.FSGroupChangePolicy != nil {
		errs = append(errs, validateEnum(path.Child("fsGroupChangePolicy"), *sc.FSGroupChangePolicy, supportedFSGroupPolicies...)...)
	}
	if sc.SupplementalGroupsPolicy != nil {
		errs = append(errs, validateEnum(path.Child("supplementalGroupsPolicy"), *sc.SupplementalGroupsPolicy, supportedSupplementalMode...)...)
	}
	errs = append(errs, validateSysctls(sc.Sysctls, path.Child("sysctls"))...)
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, path.Child("seccompProfile"))...)
	errs = append(errs, validateAppArmorProfile(sc.AppArmorProfile, path.Child("appArmorProfile"))...)
	if sc.WindowsOptions != nil {
		errs = append(errs, field.Forbidden(path.Child("windowsOptions"), "windows options cannot be set for a linux pod"))
	}
	return errs
}

// validateHostUsers: a pod in its own user namespace may not share the
// host's network, PID or IPC namespace (the API server 1.37's rule, with
// UserNamespacesHostNetworkSupport off, its default).
func validateHostUsers(spec *v1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.HostUsers != nil && !*spec.HostUsers {
		for _, host := range []struct {
			field string
			set   bool
		}{{"hostNetwork", spec.HostNetwork}, {"hostPID", spec.HostPID}, {"hostIPC", spec.HostIPC}} {
			if host.set {
				errs = append(errs, field.Forbidden(specPath.Child(host.field), "when `hostUsers` is false"))
			}
		}
	}
	return errs
}

// validateContainerHostUsers applies the API server's rules on a
// container for the pod's hostUsers: volumeDevices are forbidden in a user
// namespace (they are neither idmapped nor chowned), and an Unmasked
// procMount needs one.
func validateContainerHostUsers(spec *v1.PodSpec, c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	hostUsers := spec.HostUsers == nil || *spec.HostUsers
	if !hostUsers && len(c.VolumeDevices) > 0 {
		errs = append(errs, field.Forbidden(path.Child("volumeDevices"), "when `hostUsers` is false"))
	}
	if sc := c.SecurityContext; hostUsers && sc != nil && sc.ProcMount != nil && *sc.ProcMount == v1.UnmaskedProcMount {
		errs = append(errs, field.Invalid(path.Child("securityContext", "procMount"), *sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
	}
	return errs
}

func validateIDs(user, group *int64, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if user != nil {
		errs = append(errs, invalidEach(path.Child("runAsUser"), *user, validation.IsValidUserID(*user))...)
	}
	if group != nil {
		errs = append(errs, invalidEach(path.Child("runAsGroup"), *group, validation.IsValidGroupID(*group))...)
	}
	return errs
}

func validateSysctls(sysctls []v1.Sysctl, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, sysctl := range sysctls {
		namePath := path.Index(i).Child("name")
		switch {
		case sysctl.Name == "":
			errs = append(errs, field.Required(namePath, ""))
		case seen[sysctl.Name]:
			errs = append(errs, field.Duplicate(namePath, sysctl.Name))
		}
		seen[sysctl.Name] = true
	}
	return errs
}

func validateSeccompProfile(profile *v1.SeccompProfile, path *field.Path) field.ErrorList {
	if profile == nil {
		return nil
	}
	errs := validateEnum(path.Child("type"), profile.Type, supportedSeccompTypes...)
	return append(errs, validateLocalhostProfile(profile.Type == v1.SeccompProfileTypeLocalhost, profile.LocalhostProfile, path)...)
}

func validateAppArmorProfile(profile *v1.AppArmorProfile, path *field.Path) field.ErrorList {
	if profile == nil {
		return nil
	}
	errs := validateEnum(path.Child("type"), profile.Type, supportedAppArmorTypes...)
	return append(errs, validateLocalhostProfile(profile.Type == v1.AppArmorProfileTypeLocalhost, profile.LocalhostProfile, path)...)
}

// validateLocalhostProfile: a Localhost profile names its profile, and only
// a Localhost profile may.
func validateLocalhostProfile(localhost bool, name *string, path *field.Path) field.ErrorList {
	switch {
	case localhost && (name == nil || *name == ""):
		return field.ErrorList{field.Required(path.Child("localhostProfile"), "must be set when the profile type is Localhost")}
	case !localhost && name != nil:
		return field.ErrorList{field.Invalid(path.Child("localhostProfile"), *name, "can only be set when the profile type is Localhost")}
	}
	return nil
}
