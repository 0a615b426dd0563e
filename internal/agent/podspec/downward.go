package podspec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Allocatable is what the node offers pods. The downward API reports it as a
// container's limit when the container sets none (as the kubelet does), and
// oom_score_adj of burstable containers is scaled by MemoryBytes.
type Allocatable struct {
	MilliCPU              int64
	MemoryBytes           int64
	EphemeralStorageBytes int64
}

// Downward holds the values the downward API takes from outside the Pod
// object.
type Downward struct {
	PodIPs      []string
	HostIPs     []string
	Allocatable Allocatable
}

// FieldRefValue resolves an env var's or downwardAPI volume item's fieldRef
// against the pod: metadata.name / namespace / uid, metadata.labels and
// metadata.annotations (whole, as sorted key="value" lines, or one key with
// ['key']), spec.nodeName, spec.serviceAccountName, status.podIP(s) and
// status.hostIP(s) (lists joined by ",").
func FieldRefValue(pod *v1.Pod, ref *v1.ObjectFieldSelector, dw Downward) (string, error) {
	if ref.APIVersion != "" && ref.APIVersion != "v1" {
		return "", fmt.Errorf("fieldRef %q: unsupported apiVersion %q", ref.FieldPath, ref.APIVersion)
	}
	path := ref.FieldPath
	if field, key, ok := splitSubscript(path); ok {
		switch field {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldRef %q: %s takes no subscript", path, field)
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return FormatMap(pod.Labels), nil
	case "metadata.annotations":
		return FormatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return firstOrEmpty(dw.PodIPs), nil
	case "status.podIPs":
		return strings.Join(dw.PodIPs, ","), nil
	case "status.hostIP":
		return firstOrEmpty(dw.HostIPs), nil
	case "status.hostIPs":
		return strings.Join(dw.HostIPs, ","), nil
	}
	return "", fmt.Errorf("fieldRef %q: unsupported field path", path)
}

// FormatMap renders labels or annotations the downward API way: one
// key="value" line per key, keys sorted, values Go-quoted, no final newline.
func FormatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// splitSubscript splits "metadata.labels['key']" into its field and key.
func splitSubscript(path string) (field, key string, ok bool) {
	open := strings.Index(path, "['")
	if open <= 0 || !strings.HasSuffix(path, "']") || open+2 > len(path)-2 {
		return "", "", false
	}
	return path[:open], path[open+2 : len(path)-2], true
}

func firstOrEmpty(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// ResourceFieldRefValue resolves a resourceFieldRef: limits.* or requests.*
// of cpu, memory or ephemeral-storage of the named container (ref's
// containerName, else self), divided by the divisor (default 1) and rounded
// up. An unset limit reads as the node's allocatable amount.
func ResourceFieldRefValue(pod *v1.Pod, self *v1.Container, ref *v1.ResourceFieldSelector, alloc Allocatable) (string, error) {
	c := self
	if ref.ContainerName != "" {
		found, _, ok := FindContainer(pod, ref.ContainerName)
		if !ok {
			return "", fmt.Errorf("resourceFieldRef %q: no container named %q", ref.Resource, ref.ContainerName)
		}
		c = found
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef %q: containerName is required here", ref.Resource)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("resourceFieldRef: unsupported resource %q", ref.Resource)
	}
	amount, err := resourceAmount(c, kind, v1.ResourceName(name), alloc)
	if err != nil {
		return "", fmt.Errorf("resourceFieldRef: %w", err)
	}
	return divideRoundingUp(v1.ResourceName(name), amount, ref.Divisor), nil
}

func resourceAmount(c *v1.Container, kind string, name v1.ResourceName, alloc Allocatable) (resource.Quantity, error) {
	if name != v1.ResourceCPU && name != v1.ResourceMemory && name != v1.ResourceEphemeralStorage {
		return resource.Quantity{}, fmt.Errorf("unsupported resource %s.%s", kind, name)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	if q, ok := list[name]; ok {
		return q, nil
	}
	if kind == "requests" {
		return resource.Quantity{}, nil
	}
	switch name {
	case v1.ResourceCPU:
		return *resource.NewMilliQuantity(alloc.MilliCPU, resource.DecimalSI), nil
	case v1.ResourceMemory:
		return *resource.NewQuantity(alloc.MemoryBytes, resource.BinarySI), nil
	default:
		return *resource.NewQuantity(alloc.EphemeralStorageBytes, resource.BinarySI), nil
	}
}

func divideRoundingUp(name v1.ResourceName, amount, divisor resource.Quantity) string {
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == v1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(amount.MilliValue())/float64(divisor.MilliValue()))), 10)
	}
	return strconv.FormatInt(int64(math.Ceil(float64(amount.Value())/float64(divisor.Value()))), 10)
}
