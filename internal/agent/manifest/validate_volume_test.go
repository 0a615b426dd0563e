package manifest

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The volumes of webManifests: config (configMap), work and logs (emptyDir).
func configVolume(p *v1.Pod) *v1.ConfigMapVolumeSource { return p.Spec.Volumes[0].ConfigMap }
func mount(p *v1.Pod, i int) *v1.VolumeMount           { return &app(p).VolumeMounts[i] }

func addVolume(p *v1.Pod, name string, source v1.VolumeSource) {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: source})
}

func TestValidateVolumes(t *testing.T) {
	runPodCases(t, []podCase{
		{"volume name must be a DNS label", "", func(p *v1.Pod) { p.Spec.Volumes[2].Name = "Logs" }, `spec.volumes[2].name: Invalid value: "Logs"`},
		{"duplicate volume name", "", func(p *v1.Pod) { p.Spec.Volumes[2].Name = "work" }, `spec.volumes[2].name: Duplicate value: "work"`},
		{"two volume types", "", func(p *v1.Pod) { p.Spec.Volumes[1].HostPath = &v1.HostPathVolumeSource{Path: "/srv"} },
			"spec.volumes[1].emptyDir: Forbidden: may not specify more than 1 volume type"},
		{"volume type berth cannot build", "", func(p *v1.Pod) {
			addVolume(p, "data", v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:storage", FSType: "ext4"}})
		}, "spec.volumes[3].iscsi: Forbidden: berth supports only configMap, downwardAPI, emptyDir, hostPath, image, persistentVolumeClaim, projected, secret volumes"},
		{"a claim names it", "", func(p *v1.Pod) {
			addVolume(p, "data", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}})
		}, "spec.volumes[3].persistentVolumeClaim.claimName: Required value"},
		{"emptyDir in memory with a size", "", func(p *v1.Pod) {
			p.Spec.Volumes[1].EmptyDir = &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: ptrTo(resource.MustParse("64Mi"))}
		}, ""},
		{"emptyDir medium", "", func(p *v1.Pod) { p.Spec.Volumes[1].EmptyDir.Medium = "Disk" }, `spec.volumes[1].emptyDir.medium: Unsupported value: "Disk"`},
		{"emptyDir negative size", "", func(p *v1.Pod) { p.Spec.Volumes[1].EmptyDir.SizeLimit = ptrTo(resource.MustParse("-1Mi")) },
			"spec.volumes[1].emptyDir.sizeLimit: Invalid value"},
		{"hostPath type", "", func(p *v1.Pod) {
			addVolume(p, "host", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/data", Type: ptrTo(v1.HostPathType("Dir"))}})
		}, `spec.volumes[3].hostPath.type: Unsupported value: "Dir"`},
		{"hostPath", "", func(p *v1.Pod) {
			addVolume(p, "host", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/data", Type: ptrTo(v1.HostPathDirectoryOrCreate)}})
		}, ""},
		{"hostPath relative", "", func(p *v1.Pod) {
			addVolume(p, "host", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "srv", Type: ptrTo(v1.HostPathUnset)}})
		}, `spec.volumes[3].hostPath.path: Invalid value: "srv": must be an absolute path`},
		{"hostPath with ..", "", func(p *v1.Pod) {
			addVolume(p, "host", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/../etc", Type: ptrTo(v1.HostPathUnset)}})
		}, `spec.volumes[3].hostPath.path: Invalid value: "/srv/../etc": must not contain '..'`},
		{"configMap name required", "", func(p *v1.Pod) { configVolume(p).Name = "" }, "spec.volumes[0].configMap.name: Required value"},
		{"item key required", "", func(p *v1.Pod) { configVolume(p).Items[0].Key = "" }, "spec.volumes[0].configMap.items[0].key: Required value"},
		{"item path absolute", "", func(p *v1.Pod) { configVolume(p).Items[0].Path = "/etc/nginx.conf" },
			`spec.volumes[0].configMap.items[0].path: Invalid value: "/etc/nginx.conf": must be a relative path`},
		{"item path with ..", "", func(p *v1.Pod) { configVolume(p).Items[0].Path = "conf/../../x" }, "items[0].path: Invalid value: \"conf/../../x\": must not contain '..'"},
		{"item path starting with ..", "", func(p *v1.Pod) { configVolume(p).Items[0].Path = "..data" }, "must not start with '..'"},
		{"item path in a subdirectory", "", func(p *v1.Pod) { configVolume(p).Items[0].Path = "conf.d/nginx.conf" }, ""},
		{"item mode", "", func(p *v1.Pod) { configVolume(p).Items[0].Mode = ptrTo(int32(0o1000)) }, "spec.volumes[0].configMap.items[0].mode: Invalid value: 512"},
		{"defaultMode", "", func(p *v1.Pod) { configVolume(p).DefaultMode = ptrTo(int32(-1)) }, "spec.volumes[0].configMap.defaultMode: Invalid value: -1"},
		{"modes", "", func(p *v1.Pod) {
			configVolume(p).DefaultMode, configVolume(p).Items[0].Mode = ptrTo(int32(0o440)), ptrTo(int32(0o400))
		}, ""},
		{"secret volume", "", func(p *v1.Pod) {
			addVolume(p, "creds", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "web-secret", DefaultMode: ptrTo(int32(0o400)), Items: []v1.KeyToPath{{Key: "password", Path: "pw"}}}})
		}, ""},
		{"secret volume item path", "", func(p *v1.Pod) {
			addVolume(p, "creds", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "web-secret", DefaultMode: ptrTo(int32(0o400)), Items: []v1.KeyToPath{{Key: "password", Path: "../pw"}}}})
		}, `spec.volumes[3].secret.items[0].path: Invalid value: "../pw": must not contain '..'`},
		{"secret name required", "", func(p *v1.Pod) {
			addVolume(p, "creds", v1.VolumeSource{Secret: &v1.SecretVolumeSource{DefaultMode: ptrTo(int32(0o400))}})
		}, "spec.volumes[3].secret.secretName: Required value"},
	})
}

// TestValidateImageVolumes: the API server's rules, a reference and a
// known pull policy; a mount of one may be read-write in the manifest
// (the kubelet mounts it read-only anyway) and may have a subPath or a
// subPathExpr.
func TestValidateImageVolumes(t *testing.T) {
	image := func(p *v1.Pod, source v1.ImageVolumeSource) {
		addVolume(p, "tools", v1.VolumeSource{Image: &source})
		app(p).VolumeMounts = append(app(p).VolumeMounts, v1.VolumeMount{Name: "tools", MountPath: "/tools"})
	}
	runPodCases(t, []podCase{
		{"image volume", "", func(p *v1.Pod) {
			image(p, v1.ImageVolumeSource{Reference: "tools:v1", PullPolicy: v1.PullIfNotPresent})
		}, ""},
		{"reference required", "", func(p *v1.Pod) { image(p, v1.ImageVolumeSource{PullPolicy: v1.PullNever}) },
			"spec.volumes[3].image.reference: Required value"},
		{"pull policy", "", func(p *v1.Pod) { image(p, v1.ImageVolumeSource{Reference: "tools:v1", PullPolicy: "Sometimes"}) },
			`spec.volumes[3].image.pullPolicy: Unsupported value: "Sometimes"`},
		{"read-write mount, subPath", "", func(p *v1.Pod) {
			image(p, v1.ImageVolumeSource{Reference: "tools:v1", PullPolicy: v1.PullAlways})
			m := &app(p).VolumeMounts[len(app(p).VolumeMounts)-1]
			m.ReadOnly, m.SubPath = false, "bin"
		}, ""},
		{"subPathExpr", "", func(p *v1.Pod) {
			image(p, v1.ImageVolumeSource{Reference: "tools:v1", PullPolicy: v1.PullAlways})
			app(p).VolumeMounts[len(app(p).VolumeMounts)-1].SubPathExpr = "$(POD_NAME)"
		}, ""},
		{"subPath with ..", "", func(p *v1.Pod) {
			image(p, v1.ImageVolumeSource{Reference: "tools:v1", PullPolicy: v1.PullAlways})
			app(p).VolumeMounts[len(app(p).VolumeMounts)-1].SubPath = "bin/../.."
		}, `subPath: Invalid value: "bin/../..": must not contain '..'`},
	})
}

func TestValidateDownwardAPIAndProjectedVolumes(t *testing.T) {
	downward := func(items ...v1.DownwardAPIVolumeFile) v1.VolumeSource {
		return v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{DefaultMode: ptrTo(int32(0o644)), Items: items}}
	}
	fieldFile := func(path, fieldPath string) v1.DownwardAPIVolumeFile {
		return v1.DownwardAPIVolumeFile{Path: path, FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath}}
	}
	projected := func(sources ...v1.VolumeProjection) v1.VolumeSource {
		return v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptrTo(int32(0o644)), Sources: sources}}
	}
	configMapProjection := func(key, path string) v1.VolumeProjection {
		return v1.VolumeProjection{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "web-config"}, Items: []v1.KeyToPath{{Key: key, Path: path}}}}
	}
	runPodCases(t, []podCase{
		{"downwardAPI labels and name", "", func(p *v1.Pod) {
			addVolume(p, "info", downward(fieldFile("labels", "metadata.labels"), fieldFile("name", "metadata.name")))
		}, ""},
		{"downwardAPI pod IP is env only", "", func(p *v1.Pod) { addVolume(p, "info", downward(fieldFile("ip", "status.podIP"))) },
			`spec.volumes[3].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "status.podIP"`},
		{"downwardAPI item without a source", "", func(p *v1.Pod) { addVolume(p, "info", downward(v1.DownwardAPIVolumeFile{Path: "x"})) },
			"spec.volumes[3].downwardAPI.items[0]: Required value: one of fieldRef and resourceFieldRef is required"},
		{"downwardAPI resource needs a container", "", func(p *v1.Pod) {
			addVolume(p, "info", downward(v1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}))
		}, "spec.volumes[3].downwardAPI.items[0].resourceFieldRef.containerName: Required value"},
		{"downwardAPI resource of a container", "", func(p *v1.Pod) {
			addVolume(p, "info", downward(v1.DownwardAPIVolumeFile{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu"}}))
		}, ""},
		{"projected ConfigMap and downwardAPI", "", func(p *v1.Pod) {
			addVolume(p, "all", projected(configMapProjection("log_level", "level"), v1.VolumeProjection{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{fieldFile("name", "metadata.name")}}}))
		}, ""},
		{"projected duplicate paths", "", func(p *v1.Pod) {
			addVolume(p, "all", projected(configMapProjection("log_level", "x"), configMapProjection("nginx.conf", "x")))
		}, `spec.volumes[3].projected: Invalid value: "x": conflicting duplicate paths`},
		{"projected source with two types", "", func(p *v1.Pod) {
			both := configMapProjection("log_level", "x")
			both.Secret = &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "web-secret"}}
			addVolume(p, "all", projected(both))
		}, "spec.volumes[3].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source"},
		{"projected service account token", "", func(p *v1.Pod) {
			addVolume(p, "token", projected(v1.VolumeProjection{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}}))
		}, "spec.volumes[3].projected.sources[0].serviceAccountToken: Forbidden: berth supports only configMap, secret and downwardAPI projections"},
	})
}

func TestValidateVolumeMounts(t *testing.T) {
	runPodCases(t, []podCase{
		{"mount of a missing volume", "", func(p *v1.Pod) { mount(p, 0).Name = "nope" }, `spec.containers[0].volumeMounts[0].name: Not found: "nope"`},
		{"mount name required", "", func(p *v1.Pod) { mount(p, 0).Name = "" }, "spec.containers[0].volumeMounts[0].name: Required value"},
		{"mount of an invalid volume", "", func(p *v1.Pod) { p.Spec.Volumes[1].HostPath = &v1.HostPathVolumeSource{Path: "/srv"} },
			`spec.containers[0].volumeMounts[0].name: Not found: "work"`},
		{"mountPath required", "", func(p *v1.Pod) { mount(p, 0).MountPath = "" }, "spec.containers[0].volumeMounts[0].mountPath: Required value"},
		{"mountPath relative", "", func(p *v1.Pod) { mount(p, 0).MountPath = "etc/nginx" },
			`spec.containers[0].volumeMounts[0].mountPath: Invalid value: "etc/nginx": must be an absolute path`},
		{"duplicate mountPath", "", func(p *v1.Pod) { mount(p, 1).MountPath = "/etc/nginx/conf.d/" },
			`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/etc/nginx/conf.d/": must be unique`},
		{"one volume mounted twice", "", func(p *v1.Pod) {
			app(p).VolumeMounts = append(app(p).VolumeMounts, v1.VolumeMount{Name: "config", MountPath: "/etc/nginx/nginx.conf", SubPath: "nginx.conf", ReadOnly: true})
		}, ""},
		{"subPath with ..", "", func(p *v1.Pod) { mount(p, 0).SubPath = "../escape" },
			`spec.containers[0].volumeMounts[0].subPath: Invalid value: "../escape": must not contain '..'`},
		{"subPath absolute", "", func(p *v1.Pod) { mount(p, 0).SubPath = "/abs" }, `volumeMounts[0].subPath: Invalid value: "/abs": must be a relative path`},
		{"subPath and subPathExpr", "", func(p *v1.Pod) { mount(p, 0).SubPath, mount(p, 0).SubPathExpr = "a", "$(POD_NAME)" },
			"subPathExpr and subPath are mutually exclusive"},
		{"subPathExpr", "", func(p *v1.Pod) { mount(p, 1).SubPathExpr = "$(POD_IP)" }, ""},
		{"mountPropagation", "", func(p *v1.Pod) { mount(p, 0).MountPropagation = ptrTo(v1.MountPropagationMode("Shared")) },
			`volumeMounts[0].mountPropagation: Unsupported value: "Shared"`},
		{"Bidirectional needs privilege", "", func(p *v1.Pod) { mount(p, 0).MountPropagation = ptrTo(v1.MountPropagationBidirectional) },
			"volumeMounts[0].mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"},
		{"recursiveReadOnly needs readOnly", "", func(p *v1.Pod) { mount(p, 0).RecursiveReadOnly = ptrTo(v1.RecursiveReadOnlyEnabled) },
			"volumeMounts[0].recursiveReadOnly: Forbidden: may only be specified when readOnly is true"},
		{"init container mounts", "", func(p *v1.Pod) { initConfig(p).VolumeMounts[0].Name = "conf" }, `spec.initContainers[0].volumeMounts[0].name: Not found: "conf"`},
	})
}
