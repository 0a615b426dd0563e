package manifest

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The volume types the agent can build (package volume), and image
// volumes, which the runtime mounts.
var supportedVolumeTypes = []string{"configMap", "downwardAPI", "emptyDir", "hostPath", "image", "persistentVolumeClaim", "projected", "secret"}

var supportedHostPathTypes = []v1.HostPathType{
	v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory, v1.HostPathFileOrCreate,
	v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev,
}

const fileModeMessage = "must be a number between 0 and 0777 (octal), both inclusive"

// validateVolumes checks the pod's volumes and returns the valid ones by
// name, for mounts to refer to.
func validateVolumes(volumes []v1.Volume, containerNames map[string]bool, path *field.Path) (map[string]*v1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	valid := map[string]*v1.VolumeSource{}
	seen := map[string]bool{}
	for i := range volumes {
		vol, volPath := &volumes[i], path.Index(i)
		volErrs := validateVolumeSource(&vol.VolumeSource, containerNames, volPath)
		if vol.Name == "" {
			volErrs = append(volErrs, field.Required(volPath.Child("name"), ""))
		} else {
			volErrs = append(volErrs, invalidEach(volPath.Child("name"), vol.Name, validation.IsDNS1123Label(vol.Name))...)
		}
		if seen[vol.Name] {
			volErrs = append(volErrs, field.Duplicate(volPath.Child("name"), vol.Name))
		}
		seen[vol.Name] = true
		if len(volErrs) == 0 {
			valid[vol.Name] = &vol.VolumeSource
		}
		errs = append(errs, volErrs...)
	}
	return valid, errs
}

// validateVolumeSource requires exactly one volume type, one berth supports.
func validateVolumeSource(source *v1.VolumeSource, containerNames map[string]bool, path *field.Path) field.ErrorList {
	types := volumeSourceTypes(source)
	if len(types) == 0 {
		return field.ErrorList{field.Required(path, "must specify a volume type")}
	}
	var errs field.ErrorList
	for _, extra := range types[1:] {
		errs = append(errs, field.Forbidden(path.Child(extra), "may not specify more than 1 volume type"))
	}
	if !slices.Contains(supportedVolumeTypes, types[0]) {
		detail := "berth supports only " + strings.Join(supportedVolumeTypes, ", ") + " volumes"
		return append(errs, field.Forbidden(path.Child(types[0]), detail))
	}
	switch {
	case source.EmptyDir != nil:
		errs = append(errs, validateEmptyDir(source.EmptyDir, path.Child("emptyDir"))...)
	case source.HostPath != nil:
		errs = append(errs, validateHostPath(source.HostPath, path.Child("hostPath"))...)
	case source.ConfigMap != nil:
		errs = append(errs, requireName(source.ConfigMap.Name, path.Child("configMap", "name"))...)
		errs = append(errs, validateKeyFiles(source.ConfigMap.DefaultMode, source.ConfigMap.Items, path.Child("configMap"))...)
	case source.PersistentVolumeClaim != nil:
		errs = append(errs, requireName(source.PersistentVolumeClaim.ClaimName, path.Child("persistentVolumeClaim", "claimName"))...)
	case source.Secret != nil:
		errs = append(errs, requireName(source.Secret.SecretName, path.Child("secret", "secretName"))...)
		errs = append(errs, validateKeyFiles(source.Secret.DefaultMode, source.Secret.Items, path.Child("secret"))...)
	case source.DownwardAPI != nil:
		downward := path.Child("downwardAPI")
		errs = append(errs, validateFileMode(source.DownwardAPI.DefaultMode, downward.Child("defaultMode"))...)
		for i := range source.DownwardAPI.Items {
			errs = append(errs, validateDownwardAPIFile(&source.DownwardAPI.Items[i], containerNames, downward.Child("items").Index(i))...)
		}
	case source.Projected != nil:
		errs = append(errs, validateProjected(source.Projected, containerNames, path.Child("projected"))...)
	case source.Image != nil:
		errs = append(errs, validateImageVolume(source.Image, path.Child("image"))...)
	}
	return errs
}

// validateImageVolume is the API server's rule for an image volume: a
// reference, and a pull policy (defaulted as a container's).
func validateImageVolume(image *v1.ImageVolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if image.Reference == "" {
		errs = append(errs, field.Required(path.Child("reference"), ""))
	}
	return append(errs, validateEnum(path.Child("pullPolicy"), image.PullPolicy, v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)...)
}

// volumeSourceTypes lists the JSON names of the set fields of a struct of
// pointers, such as v1.VolumeSource or v1.VolumeProjection, in field order.
func volumeSourceTypes(source any) []string {
	value := reflect.ValueOf(source).Elem()
	var names []string
	for i := range value.NumField() {
		if f := value.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(value.Type().Field(i).Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	return names
}

var supportedStorageMedia = []v1.StorageMedium{v1.StorageMediumDefault, v1.StorageMediumMemory, v1.StorageMediumHugePages}

func validateEmptyDir(emptyDir *v1.EmptyDirVolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if limit := emptyDir.SizeLimit; limit != nil && limit.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(path.Child("sizeLimit"), limit.String(), "must be greater than or equal to 0"))
	}
	medium := emptyDir.Medium
	if !slices.Contains(supportedStorageMedia, medium) && !strings.HasPrefix(string(medium), string(v1.StorageMediumHugePagesPrefix)) {
		errs = append(errs, field.NotSupported(path.Child("medium"), medium, supportedStorageMedia))
	}
	return errs
}

// validateHostPath requires an absolute path without "..": the agent binds
// it from the host as is.
func validateHostPath(hostPath *v1.HostPathVolumeSource, volPath *field.Path) field.ErrorList {
	pathPath := volPath.Child("path")
	if hostPath.Path == "" {
		return field.ErrorList{field.Required(pathPath, "")}
	}
	var errs field.ErrorList
	if !path.IsAbs(hostPath.Path) {
		errs = append(errs, field.Invalid(pathPath, hostPath.Path, "must be an absolute path"))
	}
	errs = append(errs, validateNoBacksteps(hostPath.Path, pathPath)...)
	if hostPath.Type != nil {
		errs = append(errs, validateHostPathType(*hostPath.Type, volPath.Child("type"))...)
	}
	return errs
}

func validateHostPathType(t v1.HostPathType, path *field.Path) field.ErrorList {
	if !slices.Contains(supportedHostPathTypes, t) {
		return field.ErrorList{field.NotSupported(path, t, supportedHostPathTypes)}
	}
	return nil
}

func requireName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return invalidEach(path, name, validation.IsDNS1123Subdomain(name))
}

// validateKeyFiles checks a ConfigMap or Secret volume's mode and items.
func validateKeyFiles(defaultMode *int32, items []v1.KeyToPath, path *field.Path) field.ErrorList {
	errs := validateFileMode(defaultMode, path.Child("defaultMode"))
	for i, item := range items {
		itemPath := path.Child("items").Index(i)
		if item.Key == "" {
			errs = append(errs, field.Required(itemPath.Child("key"), ""))
		} else {
			errs = append(errs, invalidEach(itemPath.Child("key"), item.Key, validation.IsConfigMapKey(item.Key))...)
		}
		errs = append(errs, validateVolumeFilePath(item.Path, itemPath.Child("path"))...)
		errs = append(errs, validateFileMode(item.Mode, itemPath.Child("mode"))...)
	}
	return errs
}

func validateFileMode(mode *int32, path *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > 0o777) {
		return field.ErrorList{field.Invalid(path, *mode, fileModeMessage)}
	}
	return nil
}

func validateDownwardAPIFile(file *v1.DownwardAPIVolumeFile, containerNames map[string]bool, path *field.Path) field.ErrorList {
	errs := validateVolumeFilePath(file.Path, path.Child("path"))
	switch {
	case file.FieldRef != nil && file.ResourceFieldRef != nil:
		errs = append(errs, field.Invalid(path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
	case file.FieldRef != nil:
		errs = append(errs, validateFieldSelector(file.FieldRef, volumeFieldPaths, path.Child("fieldRef"))...)
	case file.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(containerNames, file.ResourceFieldRef, true, path.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(path, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, validateFileMode(file.Mode, path.Child("mode"))...)
}

// validateProjected checks each source of a projected volume (exactly one
// type, one berth supports) and that no two files have the same path.
func validateProjected(projected *v1.ProjectedVolumeSource, containerNames map[string]bool, path *field.Path) field.ErrorList {
	errs := validateFileMode(projected.DefaultMode, path.Child("defaultMode"))
	paths := map[string]bool{}
	usePath := func(filePath string) {
		if filePath != "" && paths[filePath] {
			errs = append(errs, field.Invalid(path, filePath, "conflicting duplicate paths"))
		}
		paths[filePath] = true
	}
	for i := range projected.Sources {
		source, sourcePath := &projected.Sources[i], path.Child("sources").Index(i)
		types := volumeSourceTypes(source)
		switch {
		case len(types) == 0:
			errs = append(errs, field.Required(sourcePath, "must specify a source type"))
			continue
		case len(types) > 1:
			errs = append(errs, field.Forbidden(sourcePath, "may not specify more than 1 volume type per source"))
		}
		switch {
		case source.ConfigMap != nil:
			errs = append(errs, requireName(source.ConfigMap.Name, sourcePath.Child("configMap", "name"))...)
			errs = append(errs, validateKeyFiles(nil, source.ConfigMap.Items, sourcePath.Child("configMap"))...)
			forEachItemPath(source.ConfigMap.Items, usePath)
		case source.Secret != nil:
			errs = append(errs, requireName(source.Secret.Name, sourcePath.Child("secret", "name"))...)
			errs = append(errs, validateKeyFiles(nil, source.Secret.Items, sourcePath.Child("secret"))...)
			forEachItemPath(source.Secret.Items, usePath)
		case source.DownwardAPI != nil:
			for j := range source.DownwardAPI.Items {
				errs = append(errs, validateDownwardAPIFile(&source.DownwardAPI.Items[j], containerNames, sourcePath.Child("downwardAPI", "items").Index(j))...)
				usePath(source.DownwardAPI.Items[j].Path)
			}
		default:
			detail := fmt.Sprintf("berth supports only configMap, secret and downwardAPI projections, not %s", types[0])
			errs = append(errs, field.Forbidden(sourcePath.Child(types[0]), detail))
		}
	}
	return errs
}

func forEachItemPath(items []v1.KeyToPath, use func(string)) {
	for _, item := range items {
		use(item.Path)
	}
}

// validateVolumeFilePath requires a relative path inside the volume that
// neither contains nor starts with "..".
func validateVolumeFilePath(filePath string, path *field.Path) field.ErrorList {
	if filePath == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	errs := validateRelativePath(filePath, path)
	if strings.HasPrefix(filePath, "..") && !strings.HasPrefix(filePath, "../") {
		errs = append(errs, field.Invalid(path, filePath, "must not start with '..'"))
	}
	return errs
}

// validateRelativePath requires a relative path without ".." elements.
func validateRelativePath(relative string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(relative, "/") {
		errs = append(errs, field.Invalid(path, relative, "must be a relative path"))
	}
	return append(errs, validateNoBacksteps(relative, path)...)
}

func validateNoBacksteps(p string, path *field.Path) field.ErrorList {
	if slices.Contains(strings.Split(p, "/"), "..") {
		return field.ErrorList{field.Invalid(path, p, "must not contain '..'")}
	}
	return nil
}
