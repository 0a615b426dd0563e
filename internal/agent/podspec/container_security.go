package podspec

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerSecurityContext merges the pod's and the container's security
// contexts (the container's fields win) into the CRI form.
func containerSecurityContext(pod *v1.Pod, c *v1.Container, opts ContainerOptions) (*runtimeapi.LinuxContainerSecurityContext, error) {
	csc := c.SecurityContext
	if csc == nil {
		csc = &v1.SecurityContext{}
	}
	groups, policy, err := podGroups(pod.Spec.SecurityContext)
	if err != nil {
		return nil, err
	}
	sc := &runtimeapi.LinuxContainerSecurityContext{
		Capabilities:             capabilities(csc.Capabilities),
		Privileged:               isTrue(csc.Privileged),
		ReadonlyRootfs:           isTrue(csc.ReadOnlyRootFilesystem),
		NamespaceOptions:         NamespaceOptions(pod),
		SupplementalGroups:       groups,
		SupplementalGroupsPolicy: policy,
		NoNewPrivs:               noNewPrivs(csc),
		MaskedPaths:              []string{},
		ReadonlyPaths:            []string{},
	}
	if csc.ProcMount == nil || *csc.ProcMount != v1.UnmaskedProcMount {
		sc.MaskedPaths = append(sc.MaskedPaths, defaultMaskedPaths...)
		sc.ReadonlyPaths = append(sc.ReadonlyPaths, defaultReadonlyPaths...)
	}
	user, group := effectiveUser(pod, c)
	sc.RunAsUser, sc.RunAsGroup = int64Value(user), int64Value(group)
	if user == nil {
		imageUID, imageName := imageUserID(opts.ImageUser)
		sc.RunAsUser, sc.RunAsUsername = int64Value(imageUID), imageName
	}
	if sc.Seccomp, err = seccompProfile(pod, c, opts.Seccomp); err != nil {
		return nil, err
	}
	if sc.Apparmor, err = appArmorProfile(pod, c); err != nil {
		return nil, err
	}
	if sc.Apparmor != nil {
		sc.ApparmorProfile = deprecatedAppArmorName(sc.Apparmor)
	}
	sc.NamespaceOptions.UsernsOptions = opts.UserNamespace
	if opts.TargetContainerID != "" && sc.NamespaceOptions.Pid == runtimeapi.NamespaceMode_CONTAINER {
		sc.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		sc.NamespaceOptions.TargetId = opts.TargetContainerID
	}
	return sc, nil
}

// effectiveUser is runAsUser / runAsGroup, container over pod.
func effectiveUser(pod *v1.Pod, c *v1.Container) (user, group *int64) {
	if psc := pod.Spec.SecurityContext; psc != nil {
		user, group = psc.RunAsUser, psc.RunAsGroup
	}
	if csc := c.SecurityContext; csc != nil {
		if csc.RunAsUser != nil {
			user = csc.RunAsUser
		}
		if csc.RunAsGroup != nil {
			group = csc.RunAsGroup
		}
	}
	return user, group
}

// noNewPrivs is set only when allowPrivilegeEscalation is false. Unset means
// allowed (the API default), and a privileged container or one adding
// CAP_SYS_ADMIN may always escalate.
func noNewPrivs(sc *v1.SecurityContext) bool {
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		return false
	}
	if isTrue(sc.Privileged) {
		return false
	}
	if sc.Capabilities != nil {
		for _, c := range sc.Capabilities.Add {
			if name := strings.ToUpper(string(c)); name == "SYS_ADMIN" || name == "CAP_SYS_ADMIN" {
				return false
			}
		}
	}
	return true
}

func capabilities(c *v1.Capabilities) *runtimeapi.Capability {
	if c == nil {
		return nil
	}
	out := &runtimeapi.Capability{}
	for _, add := range c.Add {
		out.AddCapabilities = append(out.AddCapabilities, string(add))
	}
	for _, drop := range c.Drop {
		out.DropCapabilities = append(out.DropCapabilities, string(drop))
	}
	return out
}

func deprecatedAppArmorName(p *runtimeapi.SecurityProfile) string {
	switch p.ProfileType {
	case runtimeapi.SecurityProfile_RuntimeDefault:
		return "runtime/default"
	case runtimeapi.SecurityProfile_Unconfined:
		return "unconfined"
	}
	return "localhost/" + p.LocalhostRef
}

func isTrue(b *bool) bool { return b != nil && *b }

// VerifyRunAsNonRoot applies runAsNonRoot as the kubelet does once the image
// is known: the effective runAsUser must not be 0; without one, the image's
// USER (as in its config: "uid[:gid]" or "name[:group]", "" meaning root)
// must be a non-zero numeric uid.
func VerifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, imageUser string) error {
	nonRoot := pod.Spec.SecurityContext != nil && isTrue(pod.Spec.SecurityContext.RunAsNonRoot)
	if c.SecurityContext != nil && c.SecurityContext.RunAsNonRoot != nil {
		nonRoot = *c.SecurityContext.RunAsNonRoot
	}
	if !nonRoot {
		return nil
	}
	if user, _ := effectiveUser(pod, c); user != nil {
		if *user == 0 {
			return fmt.Errorf("container %q: runAsUser 0 breaks runAsNonRoot", c.Name)
		}
		return nil
	}
	uid, name := imageUserID(imageUser)
	switch {
	case name != "":
		return fmt.Errorf("container %q: runAsNonRoot and image has non-numeric user %q, cannot verify it is not root", c.Name, name)
	case uid == nil || *uid == 0:
		return fmt.Errorf("container %q: runAsNonRoot and image will run as root", c.Name)
	}
	return nil
}
