package oci

import (
	"fmt"
	"path"

	"github.com/berth-dev/berth/internal/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PauseBinary is berth-pause's path inside its rootfs.
const PauseBinary = "/berth-pause"

// SandboxOOMScoreAdj is the score asked for berth-pause (before clamping):
// the pod's PID 1 should be among the last things the OOM killer picks.
const SandboxOOMScoreAdj = -998

// sandboxCPUShares is the minimum cgroup v1 cpu.shares: berth-pause only
// reaps and waits.
const sandboxCPUShares = 2

// SandboxInput is what BuildSandboxSpec needs.
type SandboxInput struct {
	Sandbox Sandbox
	// RootfsPath is a directory the caller prepares holding only the
	// berth-pause binary (at PauseBinary); it is mounted read-only. runc
	// creates the /proc and /dev mount points in it before that.
	RootfsPath string
	// OOMScoreAdjMin is the daemon's own oom_score_adj.
	OOMScoreAdjMin int
	// CgroupParent overrides the sandbox config's; "" falls back to it, then
	// to DefaultCgroupParent.
	CgroupParent string
	// SystemdCgroup builds the cgroupsPath for runc's systemd driver.
	SystemdCgroup bool
	// CgroupNamespace gives berth-pause a private cgroup namespace (not in
	// a privileged pod), as Input.CgroupNamespace does for containers.
	CgroupNamespace bool
}

// BuildSandboxSpec builds the spec of berth-pause as the holder of a pod's
// shared PID namespace: it joins the pod's pinned network, IPC and UTS
// namespaces (the host's where the pod uses the host's), gets new PID and
// mount namespaces, a read-only rootfs, no capabilities, no_new_privs, and a
// cgroup named after the sandbox id under the pod's parent.
func BuildSandboxSpec(in SandboxInput) (*specs.Spec, error) {
	spec, err := buildSandboxSpec(in)
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: pause spec: %w", in.Sandbox.ID, err)
	}
	return spec, nil
}

func buildSandboxSpec(in SandboxInput) (*specs.Spec, error) {
	sb := in.Sandbox
	if sb.ID == "" || sb.Config == nil {
		return nil, fmt.Errorf("sandbox: id or config missing: %w", errdefs.ErrInvalidArgument)
	}
	if !path.IsAbs(in.RootfsPath) {
		return nil, fmt.Errorf("rootfs path %q: not absolute: %w", in.RootfsPath, errdefs.ErrInvalidArgument)
	}
	opts := sb.Config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if opts == nil {
		opts = defaultNamespaceOptions
	}
	namespaces, err := sandboxNamespacesOf(in, opts)
	if err != nil {
		return nil, err
	}
	sysctls, err := podSysctls(sb.Config, opts)
	if err != nil {
		return nil, err
	}
	cgroupsPath, err := cgroupsPathFor(in.CgroupParent, sb.Config, sb.ID, in.SystemdCgroup)
	if err != nil {
		return nil, err
	}
	adj, clamped := ClampOOMScoreAdj(SandboxOOMScoreAdj, in.OOMScoreAdjMin)
	shares := uint64(sandboxCPUShares)
	annotations := sandboxAnnotations(sb)
	annotations[AnnotationContainerType] = ContainerTypeSandbox
	if clamped {
		annotations[AnnotationRequestedOOMScoreAdj] = fmt.Sprint(SandboxOOMScoreAdj)
	}
	seccomp, err := sandboxSeccomp(sb.Config.GetLinux().GetSecurityContext())
	if err != nil {
		return nil, err
	}
	return &specs.Spec{
		Version: SpecVersion,
		Process: &specs.Process{
			Args: []string{PauseBinary},
			// One P from the runtime's start: fewer per-P caches resident
			// in a process that only sleeps and reaps.
			Env: []string{defaultPath, "GOMAXPROCS=1"},
			Cwd: "/",
			// An empty, non-nil set: runc drops every capability.
			Capabilities:    &specs.LinuxCapabilities{},
			Rlimits:         defaultRlimits(),
			NoNewPrivileges: true,
			OOMScoreAdj:     &adj,
		},
		Root:        &specs.Root{Path: in.RootfsPath, Readonly: true},
		Hostname:    podHostname(sb, opts),
		Mounts:      standardMounts(false)[:2], // /proc and /dev: nothing else is needed
		Annotations: annotations,
		Linux: &specs.Linux{
			Sysctl: sysctls,
			Resources: &specs.LinuxResources{
				Devices: defaultDeviceRules(),
				CPU:     &specs.LinuxCPU{Shares: &shares},
			},
			CgroupsPath:   cgroupsPath,
			Namespaces:    namespaces,
			Devices:       defaultDeviceNodes(),
			MaskedPaths:   append([]string(nil), DefaultMaskedPaths...),
			ReadonlyPaths: append([]string(nil), DefaultReadonlyPaths...),
			Seccomp:       seccomp,
		},
	}, nil
}

// sandboxNamespacesOf is berth-pause's namespaces: the pod's, and a
// private cgroup namespace where in asks for one (not in a privileged pod).
func sandboxNamespacesOf(in SandboxInput, opts *runtimeapi.NamespaceOption) ([]specs.LinuxNamespace, error) {
	namespaces, err := sandboxNamespaces(in.Sandbox, opts)
	if err != nil {
		return nil, err
	}
	if in.CgroupNamespace && !in.Sandbox.Config.GetLinux().GetSecurityContext().GetPrivileged() {
		namespaces = append(namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
	return namespaces, nil
}

// sandboxSeccomp is the pod-level seccomp profile (seccomp, or the legacy
// seccomp_profile_path), applied to berth-pause as containerd applies it to
// its pause container; berth-pause holds no capabilities.
func sandboxSeccomp(psc *runtimeapi.LinuxSandboxSecurityContext) (*specs.LinuxSeccomp, error) {
	sc := &runtimeapi.LinuxContainerSecurityContext{
		Seccomp: psc.GetSeccomp(), SeccompProfilePath: psc.GetSeccompProfilePath(),
	}
	seccomp, err := containerSeccomp(sc, nil)
	if err != nil {
		return nil, fmt.Errorf("pod security context: %w", err)
	}
	return seccomp, nil
}

// sandboxNamespaces: the pod's user namespace when it has one; new mount
// and PID namespaces; network, IPC and UTS joined from the pod's pins, or
// the host's where a pin is absent (host network / host IPC).
func sandboxNamespaces(sb Sandbox, opts *runtimeapi.NamespaceOption) ([]specs.LinuxNamespace, error) {
	user, err := userNamespace(sb, opts)
	if err != nil {
		return nil, err
	}
	shared, err := podNamespaces(sb, opts)
	if err != nil {
		return nil, err
	}
	return append(append(user, specs.LinuxNamespace{Type: specs.MountNamespace}, specs.LinuxNamespace{Type: specs.PIDNamespace}), shared...), nil
}
