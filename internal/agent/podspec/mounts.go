package podspec

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// VolumePaths maps each of a pod's volume names to where it is on the host
// (package volume sets them up and returns this).
type VolumePaths map[string]string

// SubPathMount is one volumeMount with a subPath, as a ResolveSubPath hook
// sees it: the pod and container it is for, its index in the container's
// volumeMounts, the volume's name and host path, and the subPath (a
// subPathExpr already expanded, checked relative and free of "..").
type SubPathMount struct {
	PodUID     string
	Container  string
	MountIndex int
	Volume     string
	VolumePath string
	SubPath    string
}

// containerMounts turns the container's volumeMounts into CRI mounts and
// adds its termination-message file.
func containerMounts(pod *v1.Pod, c *v1.Container, env Env, paths VolumePaths, opts ContainerOptions) ([]*runtimeapi.Mount, error) {
	mounts := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts)+1)
	for i, vm := range c.VolumeMounts {
		m, err := volumeMount(pod, c, i, vm, env, paths, opts)
		if err != nil {
			return nil, fmt.Errorf("container %q: volumeMount %q at %s: %w", c.Name, vm.Name, vm.MountPath, err)
		}
		mounts = append(mounts, m)
	}
	if c.TerminationMessagePath != "" && opts.TerminationMessageHostPath != "" {
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath: c.TerminationMessagePath,
			HostPath:      opts.TerminationMessageHostPath,
		})
	}
	return mounts, nil
}

func volumeMount(pod *v1.Pod, c *v1.Container, index int, vm v1.VolumeMount, env Env, paths VolumePaths, opts ContainerOptions) (*runtimeapi.Mount, error) {
	if source := ImageVolumeSource(pod, vm.Name); source != nil {
		return imageVolumeMount(c, vm, source, env, opts)
	}
	hostPath, ok := paths[vm.Name]
	if !ok {
		return nil, fmt.Errorf("volume %q is not set up", vm.Name)
	}
	subPath, err := mountSubPath(vm, env)
	if err != nil {
		return nil, err
	}
	if subPath != "" {
		resolve := opts.ResolveSubPath
		if resolve == nil {
			resolve = joinSubPath
		}
		req := SubPathMount{
			PodUID: string(pod.UID), Container: c.Name, MountIndex: index,
			Volume: vm.Name, VolumePath: hostPath, SubPath: subPath,
		}
		if hostPath, err = resolve(req); err != nil {
			return nil, fmt.Errorf("subPath %q: %w", subPath, err)
		}
	}
	propagation, err := mountPropagation(vm.MountPropagation, c)
	if err != nil {
		return nil, err
	}
	rro, err := recursiveReadOnly(vm, opts.RecursiveReadOnlySupported)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.Mount{
		ContainerPath:     vm.MountPath,
		HostPath:          hostPath,
		Readonly:          vm.ReadOnly || volumeAlwaysReadOnly(pod, vm.Name),
		RecursiveReadOnly: rro,
		Propagation:       propagation,
	}, nil
}

// ImageVolumeSource is the image of the pod's volume name when it is an
// image volume, else nil.
func ImageVolumeSource(pod *v1.Pod, name string) *v1.ImageVolumeSource {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return pod.Spec.Volumes[i].Image
		}
	}
	return nil
}

// imageVolumeMount is the CRI mount of an image volume, as the kubelet
// makes it: the runtime mounts the image (opts.ImageVolumes has its id),
// or its subPath (image_sub_path), always read-only.
func imageVolumeMount(c *v1.Container, vm v1.VolumeMount, source *v1.ImageVolumeSource, env Env, opts ContainerOptions) (*runtimeapi.Mount, error) {
	ref, ok := opts.ImageVolumes[vm.Name]
	if !ok || ref == "" {
		return nil, fmt.Errorf("image volume %q: image %q is not pulled", vm.Name, source.Reference)
	}
	subPath, err := mountSubPath(vm, env)
	if err != nil {
		return nil, err
	}
	propagation, err := mountPropagation(vm.MountPropagation, c)
	if err != nil {
		return nil, err
	}
	rro, err := recursiveReadOnly(vm, opts.RecursiveReadOnlySupported)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.Mount{
		ContainerPath:     vm.MountPath,
		Image:             &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: source.Reference},
		ImageSubPath:      subPath,
		Readonly:          true,
		RecursiveReadOnly: rro,
		Propagation:       propagation,
	}, nil
}

// mountSubPath is subPath, or subPathExpr expanded with the container's
// environment (a reference to a missing or empty variable is an error);
// either must be relative and must not step out with "..".
func mountSubPath(vm v1.VolumeMount, env Env) (string, error) {
	subPath := vm.SubPath
	if vm.SubPathExpr != "" {
		var missing []string
		subPath = ExpandVars(vm.SubPathExpr, func(name string) (string, bool) {
			v, ok := env.Lookup(name)
			if !ok || v == "" {
				missing = append(missing, name)
			}
			return v, true
		})
		if len(missing) > 0 {
			return "", fmt.Errorf("subPathExpr %q: no value for %s", vm.SubPathExpr, strings.Join(missing, ", "))
		}
	}
	if subPath == "" {
		return "", nil
	}
	if filepath.IsAbs(subPath) {
		return "", fmt.Errorf("subPath %q must be relative", subPath)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(subPath), "/"), "..") {
		return "", fmt.Errorf("subPath %q must not contain '..'", subPath)
	}
	return subPath, nil
}

// joinSubPath is the lexical join used when the caller gives no resolver
// that checks symlinks on the host.
func joinSubPath(m SubPathMount) (string, error) {
	return filepath.Join(m.VolumePath, m.SubPath), nil
}

// volumeAlwaysReadOnly reports volumes the kubelet always mounts read-only:
// configMap, secret, downwardAPI and projected, and a persistentVolumeClaim
// volume marked readOnly.
func volumeAlwaysReadOnly(pod *v1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			claimReadOnly := v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ReadOnly
			return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil || claimReadOnly
		}
	}
	return false
}

func mountPropagation(mode *v1.MountPropagationMode, c *v1.Container) (runtimeapi.MountPropagation, error) {
	if mode == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *mode {
	case v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case v1.MountPropagationBidirectional:
		if c.SecurityContext == nil || !isTrue(c.SecurityContext.Privileged) {
			return 0, fmt.Errorf("mountPropagation Bidirectional needs a privileged container")
		}
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("mountPropagation %q: unknown", *mode)
}

func recursiveReadOnly(vm v1.VolumeMount, supported bool) (bool, error) {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !vm.ReadOnly {
		return false, fmt.Errorf("recursiveReadOnly needs readOnly")
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != v1.MountPropagationNone {
		return false, fmt.Errorf("recursiveReadOnly is incompatible with mountPropagation %s", *vm.MountPropagation)
	}
	switch *vm.RecursiveReadOnly {
	case v1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case v1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("recursiveReadOnly Enabled: the runtime does not support it")
		}
		return true, nil
	}
	return false, fmt.Errorf("recursiveReadOnly %q: unknown", *vm.RecursiveReadOnly)
}
