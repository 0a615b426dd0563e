package podspec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
)

// ContainerHash is a stable digest of the whole container spec: the first 16
// hex digits of the SHA-256 of its JSON encoding (which writes map keys
// sorted and leaves empty fields out, so the same spec always gives the same
// hash). Any change — image, command, env, probes, resources — changes it,
// and the planner restarts the container. Unlike a kubelet with in-place
// resize, resources are included: berth has no resize path, so a new
// resource request can only take effect through a restart. ConfigMap and
// Secret contents are not part of the spec, so changing them restarts
// nothing (as in Kubernetes).
func ContainerHash(c *v1.Container) string {
	data, err := json.Marshal(c)
	if err != nil {
		// A v1.Container always encodes; keep the hash total anyway.
		data = []byte(err.Error())
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
