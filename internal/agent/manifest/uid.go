package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// staticPodUID derives a pod's UID from its source and its content, as the
// kubelet does for static pods: the same pod from the same file always gets
// the same UID, and any change gives a new one. The pod is hashed with its
// defaults applied (so spelling out a default changes nothing), without its
// UID and status. A relative source is made absolute first, so that the UID
// does not depend on the directory the command ran from.
func staticPodUID(pod *v1.Pod, source string) types.UID {
	content := pod.DeepCopy()
	content.UID = ""
	content.Status = v1.PodStatus{}
	encoded, err := json.Marshal(content)
	if err != nil {
		// Cannot happen for a decoded Pod; validation reports the missing
		// UID rather than the process dying on bad input.
		return ""
	}
	hash := sha256.New()
	hash.Write([]byte(absoluteSource(source)))
	hash.Write([]byte{0})
	hash.Write(encoded)
	return types.UID(hex.EncodeToString(hash.Sum(nil)[:16]))
}

func absoluteSource(source string) string {
	if source == StdinSource || filepath.IsAbs(source) {
		return source
	}
	if abs, err := filepath.Abs(source); err == nil {
		return abs
	}
	return source
}
