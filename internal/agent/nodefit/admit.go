package nodefit

import (
	"maps"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/berth-dev/berth/internal/agent/podspec"
)

// The predicates' names (kubelet's rejection reasons) and descriptions,
// as the scheduler's plugins name them.
const (
	ReasonNodeAffinity    = "NodeAffinity"
	ReasonNodeName        = "NodeName"
	ReasonTaintToleration = "TaintToleration"

	descNodeAffinity = "node(s) didn't match Pod's node affinity/selector"
	descNodeName     = "node(s) didn't match the requested node name"
	descTaints       = "node(s) had taints that the pod didn't tolerate"
)

// Node is the agent's node as a pod sees it: its name, labels and taints.
// labels are the well-known ones with the configured ones over them, as
// kubelet lets --node-labels override its defaults.
func Node(name string, labels map[string]string, taints []v1.Taint, created time.Time) *v1.Node {
	all := WellKnownLabels(name)
	maps.Copy(all, labels)
	return &v1.Node{
		TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: all, CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.NodeSpec{Taints: append([]v1.Taint(nil), taints...)},
	}
}

// Result is an admission's verdict: Reason and Message (kubelet's
// "Predicate NodeAffinity failed: ...", without the "Pod was rejected: "
// its status adds) are set when the pod does not fit.
type Result struct {
	Admit           bool
	Reason, Message string
}

// Admit decides whether the pod may run on the node, as kubelet's
// admission with the scheduler's predicates on one node: its required
// node affinity and nodeSelector match the node's labels (and fields),
// its spec.nodeName is empty or the node's, and it tolerates every
// NoSchedule and NoExecute taint of the node (berth has no scheduler to
// keep it off a NoSchedule node, so the agent keeps it off). The first
// failing predicate is the reason, in the scheduler's order.
func Admit(pod *v1.Pod, node *v1.Node) Result {
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return reject(ReasonNodeAffinity, descNodeAffinity)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return reject(ReasonNodeName, descNodeName)
	}
	if _, untolerated := UntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations); untolerated {
		return reject(ReasonTaintToleration, descTaints)
	}
	return Result{Admit: true}
}

// UntoleratedTaint finds a NoSchedule or NoExecute taint the tolerations
// do not tolerate (PreferNoSchedule never keeps a pod off).
func UntoleratedTaint(taints []v1.Taint, tolerations []v1.Toleration) (v1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), taints, tolerations, func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}, podspec.TolerationComparisonOperators)
}

func reject(predicate, desc string) Result {
	return Result{Reason: predicate, Message: "Predicate " + predicate + " failed: " + desc}
}
