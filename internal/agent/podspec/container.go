package podspec

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerOptions are what a container config depends on beyond the pod.
type ContainerOptions struct {
	// Sources resolve configMapKeyRef, secretKeyRef and envFrom.
	Sources Sources
	// Downward resolves fieldRef and resourceFieldRef; its
	// Allocatable.MemoryBytes also scales oom_score_adj.
	Downward Downward
	Seccomp  SeccompSettings
	// TerminationMessageHostPath is the host file (created by the caller,
	// one per container instance) mounted at the container's
	// terminationMessagePath; empty mounts nothing.
	TerminationMessageHostPath string
	// TargetContainerID is, for an ephemeral container with
	// targetContainerName, the target's container id: the new container then
	// joins its PID namespace (unless the pod shares one anyway).
	TargetContainerID string
	// ImageUser is the image's configured USER, if known: used as
	// run_as_user (numeric) or run_as_username when the pod sets no
	// runAsUser, as the kubelet does.
	ImageUser string
	// ResolveSubPath gives the host path to mount for a volumeMount with a
	// subPath. The agent passes volume.Manager.MountSubPath, which opens the
	// subPath beneath the volume on descriptors and bind-mounts what it
	// opened on a per-container path, so neither symlinks nor a container
	// swapping a directory for one can lead the mount out of the volume.
	// It may have effects on the host; it is called once per such mount
	// and container instance. Nil joins the paths lexically.
	ResolveSubPath func(SubPathMount) (string, error)
	// RecursiveReadOnlySupported says whether the runtime can make mounts
	// recursively read-only.
	RecursiveReadOnlySupported bool
	// UserNamespace is the pod's user namespace, as its sandbox got it
	// (SandboxOptions.UserNamespace): it goes into the container's
	// namespace options, and its mappings onto every mount.
	UserNamespace *runtimeapi.UserNamespace
	// ImageVolumes are the images of the image volumes the container
	// mounts, by volume name, as the runtime identifies them (the image id
	// the caller got when it made sure the image is there).
	ImageVolumes map[string]string
}

// ContainerConfig is the CRI config of one container of the pod, as the
// kubelet builds it. typ says which list c comes from (an ephemeral
// container is passed as its *v1.Container view, see FindContainer);
// restartCount is the number of earlier instances of c in this pod; volumes
// are the host paths of the pod's volumes.
func ContainerConfig(pod *v1.Pod, c *v1.Container, typ ContainerType, restartCount int, opts ContainerOptions, volumes VolumePaths) (*runtimeapi.ContainerConfig, error) {
	if err := checkContainer(pod, c, typ, restartCount); err != nil {
		return nil, err
	}
	if err := checkUserNamespace(pod, opts.UserNamespace); err != nil {
		return nil, err
	}
	env, err := ResolveEnv(pod, c, opts.Sources, opts.Downward)
	if err != nil {
		return nil, err
	}
	mounts, err := containerMounts(pod, c, env, volumes, opts)
	if err != nil {
		return nil, err
	}
	mapMounts(mounts, opts.UserNamespace)
	linux, err := containerLinuxConfig(pod, c, opts)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	annotations, err := containerAnnotations(pod, c, typ, restartCount)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	stopSignal, err := stopSignal(c)
	if err != nil {
		return nil, fmt.Errorf("container %q: %w", c.Name, err)
	}
	lookup := mapLookup(env.asMap())
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image},
		Command:     ExpandAll(c.Command, lookup),
		Args:        ExpandAll(c.Args, lookup),
		WorkingDir:  c.WorkingDir,
		Envs:        env.keyValues(),
		Mounts:      mounts,
		Labels:      containerLabels(pod, c),
		Annotations: annotations,
		LogPath:     ContainerLogPath(c.Name, restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux:       linux,
		StopSignal:  stopSignal,
	}, nil
}

func checkContainer(pod *v1.Pod, c *v1.Container, typ ContainerType, restartCount int) error {
	switch {
	case c == nil:
		return fmt.Errorf("pod %s/%s: no container given", pod.Namespace, pod.Name)
	case !typ.Valid():
		return fmt.Errorf("container %q: %q is not a container type", c.Name, typ)
	case restartCount < 0:
		return fmt.Errorf("container %q: negative restart count %d", c.Name, restartCount)
	case c.Image == "":
		return fmt.Errorf("container %q: no image", c.Name)
	}
	return checkPodIdentity(pod)
}

func containerLinuxConfig(pod *v1.Pod, c *v1.Container, opts ContainerOptions) (*runtimeapi.LinuxContainerConfig, error) {
	sc, err := containerSecurityContext(pod, c, opts)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.LinuxContainerConfig{
		Resources:       containerResources(pod, c, opts.Downward.Allocatable.MemoryBytes),
		SecurityContext: sc,
	}, nil
}

// stopSignal maps lifecycle.stopSignal; unset leaves the image's / runtime's.
func stopSignal(c *v1.Container) (runtimeapi.Signal, error) {
	if c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
		return runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT, nil
	}
	// The API's SIGRTMIN+1 is the CRI's SIGNAL_SIGRTMINPLUS1.
	name := strings.NewReplacer("+", "PLUS", "-", "MINUS").Replace(string(*c.Lifecycle.StopSignal))
	v, ok := runtimeapi.Signal_value["SIGNAL_"+name]
	if !ok {
		return 0, fmt.Errorf("lifecycle.stopSignal %q: unknown signal", *c.Lifecycle.StopSignal)
	}
	return runtimeapi.Signal(v), nil
}

func (e Env) asMap() map[string]string {
	m := make(map[string]string, len(e.Vars))
	for _, v := range e.Vars {
		m[v.Name] = v.Value
	}
	return m
}

func (e Env) keyValues() []*runtimeapi.KeyValue {
	out := make([]*runtimeapi.KeyValue, len(e.Vars))
	for i, v := range e.Vars {
		out[i] = &runtimeapi.KeyValue{Key: v.Name, Value: []byte(v.Value)}
	}
	return out
}
