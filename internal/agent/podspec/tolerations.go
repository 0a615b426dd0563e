package podspec

import (
	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
)

// TolerationComparisonOperators says whether a toleration's Lt and Gt
// operators compare numbers: kubelet's TaintTolerationComparisonOperators
// feature gate, alpha and off by default in Kubernetes 1.37; off, such a
// toleration tolerates nothing.
const TolerationComparisonOperators = false

// Tolerates reports whether one of tolerations tolerates taint, as
// kubelet and the scheduler match them.
func Tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), taint, TolerationComparisonOperators) {
			return true
		}
	}
	return false
}
