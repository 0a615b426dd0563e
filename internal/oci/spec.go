package oci

import (
	"fmt"
	"os"
	"path"

	"github.com/berth-dev/berth/internal/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SpecVersion is the runtime-spec version written into config.json: the one
// runc 1.1.x implements.
const SpecVersion = "1.0.2"

// Annotation keys written into every spec.
const (
	AnnotationContainerType    = "io.kubernetes.cri.container-type"
	AnnotationContainerName    = "io.kubernetes.cri.container-name"
	AnnotationSandboxID        = "io.kubernetes.cri.sandbox-id"
	AnnotationSandboxName      = "io.kubernetes.cri.sandbox-name"
	AnnotationSandboxNamespace = "io.kubernetes.cri.sandbox-namespace"
	AnnotationSandboxUID       = "io.kubernetes.cri.sandbox-uid"
	AnnotationImageName        = "io.kubernetes.cri.image-name"

	ContainerTypeContainer = "container"
	ContainerTypeSandbox   = "sandbox"

	// AnnotationUnappliedAppArmor names a requested AppArmor profile that
	// berth did not apply (no AppArmor on the host, or RuntimeDefault).
	AnnotationUnappliedAppArmor = "io.berth.unapplied.apparmor"
	// AnnotationRequestedOOMScoreAdj holds the requested oom_score_adj when
	// it was raised to the daemon's own value.
	AnnotationRequestedOOMScoreAdj = "io.berth.oom-score-adj.requested"
)

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Sandbox is what a container spec needs to know about its pod.
type Sandbox struct {
	ID     string
	Config *runtimeapi.PodSandboxConfig
	// NetNS, IPCNS, UTSNS are pinned namespace paths; "" means the host's.
	NetNS, IPCNS, UTSNS string
	// PIDNS is "/proc/<pid>/ns/pid" of berth-pause when the pod shares one
	// PID namespace, else "".
	PIDNS string
	// Per-pod files bind-mounted at /etc/hostname, /etc/hosts, /etc/resolv.conf.
	HostnamePath, HostsPath, ResolvConfPath string
	// ShmPath is an optional pod-wide /dev/shm; "" gives each container a
	// private tmpfs.
	ShmPath string
	// UserNS is the pinned user namespace of a pod whose config asks for
	// one (user namespace mode POD); its containers join it.
	UserNS string
}

// Image is the resolved image of a container.
type Image struct {
	Config ocispec.ImageConfig
	Name   string
	Ref    string
}

// Input is everything BuildSpec needs for one container.
type Input struct {
	ContainerID string
	Config      *runtimeapi.ContainerConfig
	Sandbox     Sandbox
	Image       Image
	// RootfsPath is where the container's rootfs is mounted; user and group
	// names resolve from its /etc/passwd and /etc/group.
	RootfsPath string
	// OOMScoreAdjMin is the daemon's own oom_score_adj; lower requests are
	// raised to it.
	OOMScoreAdjMin int
	// CgroupParent overrides the sandbox config's cgroup parent; when both
	// are empty DefaultCgroupParent is used.
	CgroupParent string
	// SystemdCgroup builds the cgroupsPath for runc's systemd driver.
	SystemdCgroup bool
	// TargetPID is the host PID of the container named by
	// NamespaceOption.target_id; needed only for PID mode TARGET.
	TargetPID int
	// CgroupNamespace gives the container a private cgroup namespace (not
	// a privileged one): set on cgroup v2-only hosts, as containerd and
	// CRI-O do, so that /sys/fs/cgroup in it is its own cgroup.
	CgroupNamespace bool
	// ImageVolumes are the host paths of the config's image volumes (the
	// mounts with an image), by mount index: the image, or its
	// image_sub_path, mounted read-only by the caller.
	ImageVolumes map[int]string
}

// BuildSpec builds the runtime spec of an application container.
func BuildSpec(in Input) (*specs.Spec, error) {
	if err := validateInput(in); err != nil {
		return nil, fmt.Errorf("container %q: %w", in.ContainerID, err)
	}
	spec, err := buildContainerSpec(in)
	if err != nil {
		return nil, fmt.Errorf("container %q: spec: %w", in.ContainerID, err)
	}
	return spec, nil
}

func validateInput(in Input) error {
	switch {
	case in.ContainerID == "":
		return fmt.Errorf("container id: empty: %w", errdefs.ErrInvalidArgument)
	case in.Config == nil:
		return fmt.Errorf("container config: missing: %w", errdefs.ErrInvalidArgument)
	case in.Config.GetMetadata().GetName() == "":
		return fmt.Errorf("container config: metadata name: empty: %w", errdefs.ErrInvalidArgument)
	case in.Sandbox.ID == "" || in.Sandbox.Config == nil:
		return fmt.Errorf("sandbox: id or config missing: %w", errdefs.ErrInvalidArgument)
	case !path.IsAbs(in.RootfsPath):
		return fmt.Errorf("rootfs path %q: not absolute: %w", in.RootfsPath, errdefs.ErrInvalidArgument)
	}
	return nil
}

func buildContainerSpec(in Input) (*specs.Spec, error) {
	cfg := in.Config
	sc := cfg.GetLinux().GetSecurityContext()
	nsOpts := containerNamespaceOptions(in)

	process, err := buildProcess(in, nsOpts)
	if err != nil {
		return nil, err
	}
	mounts, propagation, err := containerMounts(in, nsOpts)
	if err != nil {
		return nil, err
	}
	linux, err := containerLinux(in, nsOpts)
	if err != nil {
		return nil, err
	}
	linux.RootfsPropagation = propagation
	spec := &specs.Spec{
		Version:     SpecVersion,
		Process:     process,
		Root:        &specs.Root{Path: in.RootfsPath, Readonly: sc.GetReadonlyRootfs()},
		Hostname:    podHostname(in.Sandbox, nsOpts),
		Mounts:      mounts,
		Annotations: containerAnnotations(in),
		Linux:       linux,
	}
	if err := applyOOMScoreAdj(spec, cfg.GetLinux().GetResources(), in.OOMScoreAdjMin); err != nil {
		return nil, err
	}
	if !sc.GetPrivileged() {
		_, inUserns := podUserNamespace(in.Sandbox)
		spec.Linux.MaskedPaths, spec.Linux.ReadonlyPaths = maskedAndReadonlyPaths(sc, inUserns)
	}
	if err := applySecurityProfiles(spec, sc); err != nil {
		return nil, err
	}
	return spec, nil
}

// containerLinux is the Linux section of a container's spec: its
// namespaces, devices, cgroup resources and path, and the pod's sysctls.
func containerLinux(in Input, nsOpts *runtimeapi.NamespaceOption) (*specs.Linux, error) {
	cfg := in.Config
	namespaces, err := containerNamespaces(in.Sandbox, nsOpts, in.TargetPID)
	if err != nil {
		return nil, err
	}
	if in.CgroupNamespace && !cfg.GetLinux().GetSecurityContext().GetPrivileged() {
		namespaces = append(namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
	devices, deviceRules, err := containerDevices(cfg.GetDevices(), cfg.GetLinux().GetSecurityContext().GetPrivileged())
	if err != nil {
		return nil, err
	}
	resources, err := containerResources(cfg.GetLinux().GetResources())
	if err != nil {
		return nil, err
	}
	resources.Devices = deviceRules
	sysctls, err := podSysctls(in.Sandbox.Config, nsOpts)
	if err != nil {
		return nil, err
	}
	cgroupsPath, err := cgroupsPathFor(in.CgroupParent, in.Sandbox.Config, in.ContainerID, in.SystemdCgroup)
	if err != nil {
		return nil, err
	}
	return &specs.Linux{Sysctl: sysctls, Resources: resources, CgroupsPath: cgroupsPath,
		Namespaces: namespaces, Devices: devices}, nil
}

// applySecurityProfiles sets the seccomp filter (which depends on the
// capability set already computed) and the AppArmor profile.
func applySecurityProfiles(spec *specs.Spec, sc *runtimeapi.LinuxContainerSecurityContext) error {
	seccomp, err := containerSeccomp(sc, spec.Process.Capabilities.Bounding)
	if err != nil {
		return err
	}
	spec.Linux.Seccomp = seccomp
	return applyAppArmor(spec.Process, spec.Annotations, sc)
}

func buildProcess(in Input, nsOpts *runtimeapi.NamespaceOption) (*specs.Process, error) {
	cfg := in.Config
	sc := cfg.GetLinux().GetSecurityContext()
	args, err := Command(in.Image.Config.Entrypoint, in.Image.Config.Cmd, cfg.GetCommand(), cfg.GetArgs())
	if err != nil {
		return nil, err
	}
	cwd, err := workingDir(cfg.GetWorkingDir(), in.Image.Config.WorkingDir)
	if err != nil {
		return nil, err
	}
	user, err := resolveUser(in.RootfsPath, sc, in.Image.Config.User)
	if err != nil {
		return nil, err
	}
	caps, err := containerCapabilities(sc)
	if err != nil {
		return nil, err
	}
	return &specs.Process{
		Terminal:        cfg.GetTty(),
		User:            user,
		Args:            args,
		Env:             containerEnv(in, nsOpts),
		Cwd:             cwd,
		Capabilities:    caps,
		Rlimits:         defaultRlimits(),
		NoNewPrivileges: sc.GetNoNewPrivs(),
	}, nil
}

func workingDir(requested, image string) (string, error) {
	dir := requested
	if dir == "" {
		dir = image
	}
	if dir == "" {
		return "/", nil
	}
	if !path.IsAbs(dir) {
		return "", fmt.Errorf("working dir %q: not absolute: %w", dir, errdefs.ErrInvalidArgument)
	}
	return path.Clean(dir), nil
}

// containerEnv layers the environment: default PATH < image < HOSTNAME < request.
func containerEnv(in Input, nsOpts *runtimeapi.NamespaceOption) []string {
	env := mergeEnvEntries([]string{defaultPath}, in.Image.Config.Env)
	if hostname := envHostname(in.Sandbox, nsOpts); hostname != "" {
		env = mergeEnvEntries(env, []string{"HOSTNAME=" + hostname})
	}
	return MergeEnv(env, in.Config.GetEnvs())
}

// envHostname is the pod's hostname, or the node's when the pod uses the
// host network and names none.
func envHostname(sb Sandbox, nsOpts *runtimeapi.NamespaceOption) string {
	if name := sb.Config.GetHostname(); name != "" {
		return name
	}
	if nsOpts.GetNetwork() == runtimeapi.NamespaceMode_NODE {
		if name, err := os.Hostname(); err == nil {
			return name
		}
	}
	return ""
}

func defaultRlimits() []specs.POSIXRlimit {
	return []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}}
}

func containerAnnotations(in Input) map[string]string {
	annotations := make(map[string]string, len(in.Config.GetAnnotations())+8)
	for k, v := range in.Config.GetAnnotations() {
		annotations[k] = v
	}
	for k, v := range sandboxAnnotations(in.Sandbox) {
		annotations[k] = v
	}
	annotations[AnnotationContainerType] = ContainerTypeContainer
	annotations[AnnotationContainerName] = in.Config.GetMetadata().GetName()
	imageName := in.Image.Name
	if imageName == "" {
		imageName = in.Config.GetImage().GetImage()
	}
	annotations[AnnotationImageName] = imageName
	return annotations
}

func sandboxAnnotations(sb Sandbox) map[string]string {
	meta := sb.Config.GetMetadata()
	return map[string]string{
		AnnotationSandboxID:        sb.ID,
		AnnotationSandboxName:      meta.GetName(),
		AnnotationSandboxNamespace: meta.GetNamespace(),
		AnnotationSandboxUID:       meta.GetUid(),
	}
}
