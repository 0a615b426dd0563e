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
//     devices, the host's /dev for privileged containers, a Localhost
//     seccomp profile, the AppArmor "enabled" flag, and the kernel release
//     and berth's bounding set (uname, prctl).
//   - Defaults follow containerd's CRI plugin where Kubernetes expects them
//     (capability set, masked/readonly paths, RLIMIT_NOFILE 1024:1024,
//     PATH and HOSTNAME in the environment, pod files read-only when the
//     rootfs is).
//   - no_new_privs follows the CRI field exactly (kubelet computes it from
//     allowPrivilegeEscalation); berth adds no default of its own.
//   - Seccomp (seccomp.go, seccomp_default.go): RuntimeDefault is berth's
//     own profile (deny with EPERM, an allow list, clone without namespace
//     flags, a few personalities, more calls for held capabilities such as
//     CAP_SYS_ADMIN); Localhost reads a Docker/OCI JSON profile from an
//     absolute host path (missing or invalid is InvalidArgument);
//     Unconfined or nothing requested is no filter; privileged containers
//     never get one. The deprecated seccomp_profile_path is accepted.
//   - AppArmor (apparmor.go): only a Localhost profile, by name, on a host
//     whose /sys/module/apparmor/parameters/enabled is "Y"; berth loads no
//     profiles, so RuntimeDefault, and anything on a host without AppArmor,
//     is recorded in "io.berth.unapplied.apparmor" instead.
//   - Nothing requested is dropped silently: an AppArmor profile berth does
//     not apply is named in an annotation, and a clamped oom_score_adj is
//     recorded in "io.berth.oom-score-adj.requested".
//   - "ALL" and privileged mean every capability in berth's own bounding
//     set (read with prctl), not every capability the kernel knows.
//   - run_as_non_root is kubelet's check: the CRI carries no such field.
//   - Errors wrap internal/errdefs classes: ErrInvalidArgument for a bad
//     request, ErrNotFound for a user/group/device that does not exist,
//     ErrFailedPrecondition for a sandbox that lacks a namespace the request
//     needs, ErrNotImplemented for CRI features berth does not support
//     (user namespaces, image volumes, recursive read-only mounts).
package oci
