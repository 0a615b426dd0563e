package manifest

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// setDeploymentDefaults defaults a Deployment as the API server does
// (apps/v1): replicas 1, RollingUpdate with maxSurge and maxUnavailable
// 25%, revisionHistoryLimit 10, progressDeadlineSeconds 600, and its pod
// template as a pod's spec.
func setDeploymentDefaults(d *appsv1.Deployment) {
	if d.Namespace == "" {
		d.Namespace = metav1.NamespaceDefault
	}
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptrTo(int32(1))
	}
	s := &d.Spec.Strategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromString("25%"))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = ptrTo(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptrTo(int32(600))
	}
	setFullPodSpecDefaults(&d.Spec.Template.Spec)
}

// setReplicaSetDefaults defaults a ReplicaSet: replicas 1, and its pod
// template as a pod's spec.
func setReplicaSetDefaults(rs *appsv1.ReplicaSet) {
	if rs.Namespace == "" {
		rs.Namespace = metav1.NamespaceDefault
	}
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptrTo(int32(1))
	}
	setFullPodSpecDefaults(&rs.Spec.Template.Spec)
}
