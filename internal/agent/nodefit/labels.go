package nodefit

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The beta OS and architecture labels kubelet still sets on its node.
const (
	LabelOSBeta   = "beta.kubernetes.io/os"
	LabelArchBeta = "beta.kubernetes.io/arch"
)

// kubeletLabels are the kubernetes.io labels kubelet may set through
// --node-labels (kubelet's well_known_labels.go).
var kubeletLabels = []string{
	v1.LabelHostname, v1.LabelTopologyZone, v1.LabelTopologyRegion,
	v1.LabelFailureDomainBetaZone, v1.LabelFailureDomainBetaRegion,
	v1.LabelInstanceType, v1.LabelInstanceTypeStable,
	v1.LabelOSStable, v1.LabelArchStable, LabelOSBeta, LabelArchBeta,
}

// kubeletLabelNamespaces are the label namespaces (and their subdomains)
// kubelet may set freely.
var kubeletLabelNamespaces = []string{v1.LabelNamespaceSuffixKubelet, v1.LabelNamespaceSuffixNode}

// WellKnownLabels are the labels kubelet puts on its node by itself.
func WellKnownLabels(nodeName string) map[string]string {
	return map[string]string{
		v1.LabelHostname:   nodeName,
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
		LabelOSBeta:        runtime.GOOS,
		LabelArchBeta:      runtime.GOARCH,
	}
}

// ParseLabels reads --node-labels ("key=value,key2=value2"), validated as
// kubelet validates the flag: qualified keys, valid values, and keys in
// the kubernetes.io and k8s.io namespaces only from kubelet's allowed set
// and prefixes. Errors name the flag and the labels.
func ParseLabels(flag string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(flag) == "" {
		return out, nil
	}
	for _, pair := range strings.Split(flag, ",") {
		key, value, found := strings.Cut(strings.TrimSpace(pair), "=")
		if !found {
			return nil, fmt.Errorf("--node-labels: %q: want key=value", pair)
		}
		out[strings.TrimSpace(key)] = strings.TrimSpace(value)
	}
	return out, ValidateLabels(out)
}

// ValidateLabels checks node labels as kubelet checks --node-labels.
func ValidateLabels(labels map[string]string) error {
	var unknown, invalid []string
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		if isKubernetesLabel(key) && !IsKubeletLabel(key) {
			unknown = append(unknown, key)
		}
		for _, e := range validation.IsQualifiedName(key) {
			invalid = append(invalid, fmt.Sprintf("%q: %s", key, e))
		}
		for _, e := range validation.IsValidLabelValue(labels[key]) {
			invalid = append(invalid, fmt.Sprintf("%q=%q: %s", key, labels[key], e))
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("--node-labels: unknown 'kubernetes.io' or 'k8s.io' labels %v: labels in the 'kubernetes.io' namespace must begin with an allowed prefix (%s) or be in the specifically allowed set (%s)",
			unknown, strings.Join(kubeletLabelNamespaces, ", "), strings.Join(kubeletLabels, ", "))
	}
	if len(invalid) > 0 {
		return fmt.Errorf("--node-labels: invalid node labels: %s", strings.Join(invalid, "; "))
	}
	return nil
}

// IsKubeletLabel says whether kubelet may set a kubernetes.io label.
func IsKubeletLabel(key string) bool {
	if slices.Contains(kubeletLabels, key) {
		return true
	}
	ns := labelNamespace(key)
	for _, allowed := range kubeletLabelNamespaces {
		if ns == allowed || strings.HasSuffix(ns, "."+allowed) {
			return true
		}
	}
	return false
}

func isKubernetesLabel(key string) bool {
	ns := labelNamespace(key)
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

func labelNamespace(key string) string {
	if prefix, _, found := strings.Cut(key, "/"); found {
		return prefix
	}
	return ""
}
