package manifest

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PersistentVolumeClaim is a decoded v1 PersistentVolumeClaim and the
// source it came from.
type PersistentVolumeClaim struct {
	*v1.PersistentVolumeClaim
	Source string `json:"source"`
}

const kindPersistentVolumeClaim = "PersistentVolumeClaim"

// ReclaimPolicyAnnotation sets the reclaim policy of a claim's volume
// (Delete when absent, or Retain): what happens to its data when the
// claim is deleted.
const ReclaimPolicyAnnotation = "berth.dev/reclaim-policy"

// supportedAccessModes are the access modes the API server accepts.
var supportedAccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce, v1.ReadOnlyMany, v1.ReadWriteMany, v1.ReadWriteOncePod}

// setPVCDefaults defaults a claim as the API server does: volumeMode
// Filesystem; the status is the binder's, never the manifest's.
func setPVCDefaults(pvc *v1.PersistentVolumeClaim) {
	if pvc.Namespace == "" {
		pvc.Namespace = metav1.NamespaceDefault
	}
	setPVCSpecDefaults(&pvc.Spec)
}

func setPVCSpecDefaults(spec *v1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		spec.VolumeMode = ptrTo(v1.PersistentVolumeFilesystem)
	}
}

// claimProblems validates the bundle's PersistentVolumeClaims.
func (b *Bundle) claimProblems() []Problem {
	var problems []Problem
	for _, c := range b.PersistentVolumeClaims {
		errs := validateClaimMeta(&c.ObjectMeta)
		errs = append(errs, validatePVCSpec(&c.Spec, field.NewPath("spec"))...)
		problems = append(problems, fieldProblems(c.Source, objectName(kindPersistentVolumeClaim, &c.ObjectMeta), errs)...)
	}
	return problems
}

// validatePVCSpec checks a claim's spec as the API server does, and
// refuses what berth's local volumes cannot give: block volumes, binding
// to a chosen volume, selectors and data sources.
func validatePVCSpec(spec *v1.PersistentVolumeClaimSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	modes := path.Child("accessModes")
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(modes, "at least 1 access mode is required"))
	}
	for _, m := range spec.AccessModes {
		if !slices.Contains(supportedAccessModes, m) {
			errs = append(errs, field.NotSupported(modes, m, supportedAccessModes))
		}
	}
	if slices.Contains(spec.AccessModes, v1.ReadWriteOncePod) && len(spec.AccessModes) > 1 {
		errs = append(errs, field.Forbidden(modes, "may not use ReadWriteOncePod with other access modes"))
	}
	storage := path.Child("resources", "requests").Key(string(v1.ResourceStorage))
	if q, ok := spec.Resources.Requests[v1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storage, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(storage, q.String(), "must be greater than zero"))
	}
	if spec.VolumeMode != nil && *spec.VolumeMode != v1.PersistentVolumeFilesystem {
		errs = append(errs, field.NotSupported(path.Child("volumeMode"), *spec.VolumeMode, []v1.PersistentVolumeMode{v1.PersistentVolumeFilesystem}))
		if *spec.VolumeMode == v1.PersistentVolumeBlock {
			errs[len(errs)-1].Detail = "berth's claims are local directories; block volumes are not supported"
		}
	}
	if spec.Selector != nil {
		errs = append(errs, field.Forbidden(path.Child("selector"), "berth provisions every claim itself; selecting an existing volume is not supported"))
	}
	if spec.DataSource != nil {
		errs = append(errs, field.Forbidden(path.Child("dataSource"), "berth cannot populate a claim from a snapshot or another claim"))
	}
	if spec.DataSourceRef != nil {
		errs = append(errs, field.Forbidden(path.Child("dataSourceRef"), "berth cannot populate a claim from a data source"))
	}
	if spec.VolumeName != "" {
		errs = append(errs, field.Forbidden(path.Child("volumeName"), "berth provisions every claim itself; binding to a named volume is not supported"))
	}
	return errs
}

// validateClaimMeta checks a claim's metadata as any object's, but for
// berth's reclaim-policy annotation: a key of berth's own that a claim's
// manifest may set (checked by validateReclaimAnnotation).
func validateClaimMeta(meta *metav1.ObjectMeta) field.ErrorList {
	others := meta.DeepCopy()
	delete(others.Annotations, ReclaimPolicyAnnotation)
	errs := validateObjectMeta(others, field.NewPath("metadata"))
	return append(errs, validateReclaimAnnotation(meta.Annotations, field.NewPath("metadata", "annotations"))...)
}

// validateReclaimAnnotation checks berth's reclaim-policy annotation.
func validateReclaimAnnotation(annotations map[string]string, path *field.Path) field.ErrorList {
	v, found := annotations[ReclaimPolicyAnnotation]
	if !found {
		return nil
	}
	supported := []v1.PersistentVolumeReclaimPolicy{v1.PersistentVolumeReclaimDelete, v1.PersistentVolumeReclaimRetain}
	if !slices.Contains(supported, v1.PersistentVolumeReclaimPolicy(v)) {
		return field.ErrorList{field.NotSupported(path.Key(ReclaimPolicyAnnotation), v, supported)}
	}
	return nil
}
