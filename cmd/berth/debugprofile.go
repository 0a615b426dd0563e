package main

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// The profiles of `berth debug --profile`, as kubectl debug applies them
// to an ephemeral container.
const (
	profileLegacy     = "legacy"
	profileGeneral    = "general"
	profileBaseline   = "baseline"
	profileRestricted = "restricted"
	profileNetadmin   = "netadmin"
	profileSysadmin   = "sysadmin"
)

// debugProfiles change the debug container's security context: general
// adds SYS_PTRACE; baseline clears it; restricted runs as non-root with
// every capability dropped, no privilege escalation and the runtime's
// default seccomp profile; netadmin adds NET_ADMIN and NET_RAW; sysadmin
// makes it privileged; legacy leaves it alone.
var debugProfiles = map[string]func(c *v1.Container){
	profileLegacy:   func(*v1.Container) {},
	profileGeneral:  func(c *v1.Container) { addCapabilities(c, "SYS_PTRACE") },
	profileBaseline: func(c *v1.Container) { c.SecurityContext = nil },
	profileRestricted: func(c *v1.Container) {
		c.SecurityContext = &v1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &v1.Capabilities{Drop: []v1.Capability{"ALL"}},
			AllowPrivilegeEscalation: ptr.To(false),
			SeccompProfile:           &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		}
	},
	profileNetadmin: func(c *v1.Container) { addCapabilities(c, "NET_ADMIN", "NET_RAW") },
	profileSysadmin: func(c *v1.Container) {
		if c.SecurityContext == nil {
			c.SecurityContext = &v1.SecurityContext{}
		}
		c.SecurityContext.Privileged = ptr.To(true)
	},
}

func addCapabilities(c *v1.Container, caps ...v1.Capability) {
	if c.SecurityContext == nil {
		c.SecurityContext = &v1.SecurityContext{}
	}
	if c.SecurityContext.Capabilities == nil {
		c.SecurityContext.Capabilities = &v1.Capabilities{}
	}
	c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, caps...)
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
