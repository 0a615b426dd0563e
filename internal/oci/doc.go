// Package oci owns the translation from a CRI request into an OCI runtime
// spec (config.json) for runc 1.1.x (runtime-spec 1.0.2 features only).
//
// It builds two kinds of spec:
//
//   - BuildSpec: an application container, from the CRI ContainerConfig, the
//     image config and the pod's Sandbox (pinned namespace paths, per-pod
//     files, cgroup parent).
//   - BuildSandboxSpec: berth-pause, the PID 1 that holds a pod's shared PID
//     namespace.
//
// Rules of the package:
//
//   - Pure: no runc, no mounts, no writes. The only reads are the image's
//     /etc/passwd and /etc/group (opened with openat2 RESOLVE_IN_ROOT, so a
//     symlink can never lead out of the rootfs; needs Linux 5.6+), stat of requested host
//     devices, and the host's /dev for privileged containers.
//   - Defaults follow containerd's CRI plugin where Kubernetes expects them
//     (capability set, masked/readonly paths, RLIMIT_NOFILE 1024:1024,
//     PATH and HOSTNAME in the environment, pod files read-only when the
//     rootfs is).
//   - no_new_privs follows the CRI field exactly (kubelet computes it from
//     allowPrivilegeEscalation); berth adds no default of its own.
//   - Nothing requested is dropped silently: a security profile that berth
//     does not apply yet (seccomp RuntimeDefault/Localhost, AppArmor) is
//     named in a "io.berth.unapplied.*" annotation, and a clamped
//     oom_score_adj is recorded in "io.berth.oom-score-adj.requested".
//   - Errors wrap internal/errdefs classes: ErrInvalidArgument for a bad
//     request, ErrNotFound for a user/group/device that does not exist,
//     ErrFailedPrecondition for a sandbox that lacks a namespace the request
//     needs, ErrNotImplemented for CRI features berth does not support
//     (user namespaces, image volumes, recursive read-only mounts).
package oci
