package manifest

import (
	"path"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedPropagations = []v1.MountPropagationMode{v1.MountPropagationBidirectional, v1.MountPropagationHostToContainer, v1.MountPropagationNone}
	supportedRecursiveRO  = []v1.RecursiveReadOnlyMode{v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled}
)

// validateVolumeMounts checks that each mount names a volume of the pod, at
// an absolute path no other mount of the container uses, with a relative
// subPath that stays inside the volume.
func validateVolumeMounts(pod *podContext, c *v1.Container, mountsPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPoints := map[string]bool{}
	for i, mount := range c.VolumeMounts {
		mountPath := mountsPath.Index(i)
		switch {
		case mount.Name == "":
			errs = append(errs, field.Required(mountPath.Child("name"), ""))
		case pod.volumes[mount.Name] == nil:
			errs = append(errs, field.NotFound(mountPath.Child("name"), mount.Name))
		}
		switch {
		case mount.MountPath == "":
			errs = append(errs, field.Required(mountPath.Child("mountPath"), ""))
		case !path.IsAbs(mount.MountPath):
			errs = append(errs, field.Invalid(mountPath.Child("mountPath"), mount.MountPath, "must be an absolute path"))
		case mountPoints[path.Clean(mount.MountPath)]:
			errs = append(errs, field.Invalid(mountPath.Child("mountPath"), mount.MountPath, "must be unique"))
		}
		mountPoints[path.Clean(mount.MountPath)] = true
		if mount.SubPath != "" {
			errs = append(errs, validateRelativePath(mount.SubPath, mountPath.Child("subPath"))...)
		}
		if mount.SubPathExpr != "" {
			if mount.SubPath != "" {
				errs = append(errs, field.Invalid(mountPath.Child("subPathExpr"), mount.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateRelativePath(mount.SubPathExpr, mountPath.Child("subPathExpr"))...)
		}
		errs = append(errs, validateMountPropagation(c, mount, mountPath)...)
	}
	return errs
}

func validateMountPropagation(c *v1.Container, mount v1.VolumeMount, mountPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if mode := mount.MountPropagation; mode != nil {
		errs = append(errs, validateEnum(mountPath.Child("mountPropagation"), *mode, supportedPropagations...)...)
		privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
		if *mode == v1.MountPropagationBidirectional && !privileged {
			errs = append(errs, field.Forbidden(mountPath.Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
		}
	}
	if mode := mount.RecursiveReadOnly; mode != nil {
		rroPath := mountPath.Child("recursiveReadOnly")
		errs = append(errs, validateEnum(rroPath, *mode, supportedRecursiveRO...)...)
		if *mode != v1.RecursiveReadOnlyDisabled && !mount.ReadOnly {
			errs = append(errs, field.Forbidden(rroPath, "may only be specified when readOnly is true"))
		}
		if *mode != v1.RecursiveReadOnlyDisabled && mount.MountPropagation != nil && *mount.MountPropagation != v1.MountPropagationNone {
			errs = append(errs, field.Forbidden(rroPath, "may only be specified when mountPropagation is None or not specified"))
		}
	}
	return errs
}
