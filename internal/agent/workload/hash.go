package workload

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// ComputeHash is the pod-template-hash of a Deployment's template, as the
// deployment controller computes it: FNV-32a over the template's dump, then
// the collision count, rendered in the safe alphabet.
func ComputeHash(template *v1.PodTemplateSpec, collisionCount *int32) string {
	hasher := fnv.New32a()
	fmt.Fprintf(hasher, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		buf := make([]byte, 8)
		binary.LittleEndian.PutUint32(buf, uint32(*collisionCount))
		hasher.Write(buf)
	}
	return rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))
}

// podNameSuffixLength is the length of generateName's random suffix.
const podNameSuffixLength = 5

// PodName is a new name for a pod of the ReplicaSet rsName, as the API
// server makes one from generateName "<rsName>-": five random characters
// of its alphabet (consonants and digits), the prefix cut to keep the name
// at most 63 characters.
func PodName(rsName string) string {
	prefix := rsName + "-"
	if maxPrefix := 63 - podNameSuffixLength; len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return prefix + rand.String(podNameSuffixLength)
}

// TemplateEqualIgnoringHash says whether a ReplicaSet's template is the
// Deployment's, leaving out the pod-template-hash label the ReplicaSet adds.
func TemplateEqualIgnoringHash(a, b *v1.PodTemplateSpec) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	delete(x.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(y.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	if len(x.Labels) == 0 {
		x.Labels = nil
	}
	if len(y.Labels) == 0 {
		y.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(x, y)
}

// withLabel returns a copy of labels with key=value added.
func withLabel(labels map[string]string, key, value string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}
