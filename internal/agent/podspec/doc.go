// Package podspec turns a Kubernetes Pod into the CRI configs the agent
// sends to the runtime, with the kubelet's semantics, and reads the agent's
// state back from the labels and annotations it put on them. It is pure: no
// I/O, no clock; whatever depends on the machine (the host's resolv.conf,
// allocatable resources, pod IPs, the termination-message file, the host
// path a subPath is mounted from) comes in through SandboxOptions /
// ContainerOptions.
//
// It owns:
//
//   - the label and annotation keys (keys.go; ReservedKey: berth's own,
//     which a pod may not carry and is never copied from one) and their
//     parsing back into SandboxMeta / ContainerMeta (meta.go), ContainerType,
//     ContainerHash; a sandbox carries SourceRefs (names and digests), never
//     the ConfigMaps and Secrets themselves;
//   - SandboxConfig: metadata, hostname, log directory, DNS (DNSConfig,
//     ParseResolvConf: there is no cluster DNS, every policy but None starts
//     from the host's resolv.conf), port mappings, the pod cgroup layout
//     (PodCgroupParent for cgroupfs, PodSlice for systemd), pod-level
//     security context, sysctls, overhead and
//     pod resources;
//   - ContainerConfig: image, command and args with $(VAR) expansion
//     (ExpandVars), the environment (ResolveEnv: envFrom, env, valueFrom of
//     every kind, no service links), mounts from the volume paths (subPath,
//     subPathExpr, propagation, read-only rules, the termination-message
//     file), log path, cgroup resources and oom_score_adj by QoS
//     (QOSClass, OOMScoreAdj, CPUShares, CPUQuota), security context
//     (capabilities, users and groups, no_new_privs, masked paths, seccomp,
//     AppArmor, namespaces incl. an ephemeral container's target and the
//     user namespace given in the options, whose mappings every mount
//     gets, as kubelet's applyPlatformSpecificContainerConfig does);
//   - the downward API values shared with package volume (FieldRefValue,
//     ResourceFieldRefValue, FormatMap) and the pod's references to
//     ConfigMaps and Secrets (Sources, ReferencedSources);
//   - the one toleration matcher of the agent's admission, scheduling,
//     eviction and DaemonSets (Tolerates, tolerations.go).
//
// Deliberate differences from the kubelet: variables come out in a stable
// order (first set, last value wins) rather than a map's; ContainerHash
// covers resources too (no in-place resize); the /etc/hosts, hostname and
// resolv.conf files are the runtime's job; the user namespace's blocks
// of host ids come from the caller (package userns); SELinux, devices,
// hugepages, image volumes and fileKeyRef are not supported.
package podspec
