package volume

import (
	"errors"

	v1 "k8s.io/api/core/v1"
)

// ClaimResolver finds the directory bound to a PersistentVolumeClaim of
// the pod's namespace, for that pod: it refuses a claim that does not
// exist, is being deleted, or is ReadWriteOncePod and used by another pod,
// each with the kubelet's or the scheduler's message.
type ClaimResolver interface {
	ClaimPath(pod *v1.Pod, claimName string) (string, error)
}

// claimPath is a persistentVolumeClaim volume's host path: the claim's
// own directory, bind-mounted as it is (readOnly is the mounts' business,
// podspec makes every mount of the volume read-only).
func (m *Manager) claimPath(pod *v1.Pod, src *v1.PersistentVolumeClaimVolumeSource) (string, error) {
	if m.Claims == nil {
		return "", errors.New("persistentVolumeClaim volumes need the agent's claims store")
	}
	return m.Claims.ClaimPath(pod, src.ClaimName)
}
