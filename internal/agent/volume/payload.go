package volume

import (
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// defaultFileMode is the API default of defaultMode.
const defaultFileMode = 0o644

// file is one file of a generated volume.
type file struct {
	data []byte
	mode os.FileMode
}

// payload maps a relative path in the volume to its file.
type payload map[string]file

func modeOr(mode *int32, fallback os.FileMode) os.FileMode {
	if mode == nil {
		return fallback
	}
	return os.FileMode(*mode) & os.ModePerm
}

// projectKeys maps keyed data to files: every key under its own name when
// items is empty, else each item's key to its path (a missing key is an
// error unless optional, then it is left out).
func projectKeys(data map[string][]byte, items []v1.KeyToPath, defaultMode os.FileMode, optional bool, what string) (payload, error) {
	out := payload{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = file{data: v, mode: defaultMode}
		}
		return out, nil
	}
	for _, item := range items {
		v, ok := data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, item.Key)
		}
		out[item.Path] = file{data: v, mode: modeOr(item.Mode, defaultMode)}
	}
	return out, nil
}

// configMapData merges a ConfigMap's data and binaryData.
func configMapData(cm *v1.ConfigMap) map[string][]byte {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data
}

func configMapPayload(src *v1.ConfigMapVolumeSource, sources podspec.Sources) (payload, error) {
	optional := src.Optional != nil && *src.Optional
	what := fmt.Sprintf("configMap %q", src.Name)
	cm, ok := sources.ConfigMap(src.Name)
	if !ok {
		if optional {
			return payload{}, nil
		}
		return nil, fmt.Errorf("%s not found", what)
	}
	return projectKeys(configMapData(cm), src.Items, modeOr(src.DefaultMode, defaultFileMode), optional, what)
}

func secretPayload(src *v1.SecretVolumeSource, sources podspec.Sources) (payload, error) {
	optional := src.Optional != nil && *src.Optional
	what := fmt.Sprintf("secret %q", src.SecretName)
	s, ok := sources.Secret(src.SecretName)
	if !ok {
		if optional {
			return payload{}, nil
		}
		return nil, fmt.Errorf("%s not found", what)
	}
	return projectKeys(podspec.SecretData(s), src.Items, modeOr(src.DefaultMode, defaultFileMode), optional, what)
}

// downwardPayload renders downward API items: fieldRef (metadata.*;
// labels and annotations as sorted key="value" lines) or resourceFieldRef
// (containerName required).
func downwardPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode *int32, dw podspec.Downward) (payload, error) {
	out := payload{}
	fallback := modeOr(defaultMode, defaultFileMode)
	for _, item := range items {
		var value string
		var err error
		switch {
		case item.FieldRef != nil:
			value, err = podspec.FieldRefValue(pod, item.FieldRef, dw)
		case item.ResourceFieldRef != nil:
			value, err = podspec.ResourceFieldRefValue(pod, nil, item.ResourceFieldRef, dw.Allocatable)
		default:
			err = fmt.Errorf("names neither fieldRef nor resourceFieldRef")
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI item %q: %w", item.Path, err)
		}
		out[item.Path] = file{data: []byte(value), mode: modeOr(item.Mode, fallback)}
	}
	return out, nil
}

// projectedPayload merges the sources of a projected volume; items without
// a mode take the volume's defaultMode. serviceAccountToken sources write
// nothing: there is no API server to issue tokens.
func projectedPayload(pod *v1.Pod, src *v1.ProjectedVolumeSource, sources podspec.Sources, dw podspec.Downward) (payload, error) {
	out := payload{}
	for i, p := range src.Sources {
		part, err := projectionPayload(pod, p, src.DefaultMode, sources, dw)
		if err != nil {
			return nil, fmt.Errorf("sources[%d]: %w", i, err)
		}
		for path, f := range part {
			if _, dup := out[path]; dup {
				return nil, fmt.Errorf("sources[%d]: path %q is projected twice", i, path)
			}
			out[path] = f
		}
	}
	return out, nil
}

func projectionPayload(pod *v1.Pod, p v1.VolumeProjection, defaultMode *int32, sources podspec.Sources, dw podspec.Downward) (payload, error) {
	switch {
	case p.ConfigMap != nil:
		return configMapPayload(&v1.ConfigMapVolumeSource{
			LocalObjectReference: p.ConfigMap.LocalObjectReference, Items: p.ConfigMap.Items,
			DefaultMode: defaultMode, Optional: p.ConfigMap.Optional,
		}, sources)
	case p.Secret != nil:
		return secretPayload(&v1.SecretVolumeSource{
			SecretName: p.Secret.Name, Items: p.Secret.Items, DefaultMode: defaultMode, Optional: p.Secret.Optional,
		}, sources)
	case p.DownwardAPI != nil:
		return downwardPayload(pod, p.DownwardAPI.Items, defaultMode, dw)
	case p.ServiceAccountToken != nil:
		return payload{}, nil
	case p.ClusterTrustBundle != nil:
		return nil, fmt.Errorf("clusterTrustBundle projections are not supported")
	case p.PodCertificate != nil:
		return nil, fmt.Errorf("podCertificate projections are not supported")
	}
	return nil, fmt.Errorf("projection names no source")
}
