package workload

import (
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and the env var the API server and the job controller put on a
// Job's pods.
const (
	JobControllerUIDLabel       = "batch.kubernetes.io/controller-uid"
	JobNameLabel                = "batch.kubernetes.io/job-name"
	LegacyJobControllerUIDLabel = "controller-uid"
	LegacyJobNameLabel          = "job-name"
	JobCompletionIndexKey       = "batch.kubernetes.io/job-completion-index"
	JobCompletionIndexEnv       = "JOB_COMPLETION_INDEX"
)

// SetJobSelector does what the API server does to a new Job (with its
// uid): the selector batch.kubernetes.io/controller-uid=<uid>, and that
// label, controller-uid, batch.kubernetes.io/job-name and job-name on its
// template.
func SetJobSelector(job *batchv1.Job) {
	uid := string(job.UID)
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{JobControllerUIDLabel: uid}}
	labels := maps.Clone(job.Spec.Template.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[JobControllerUIDLabel], labels[LegacyJobControllerUIDLabel] = uid, uid
	labels[JobNameLabel], labels[LegacyJobNameLabel] = job.Name, job.Name
	job.Spec.Template.Labels = labels
}

// NewJobPod is a pod of the Job as the job controller makes it: named
// from generateName, with the template's labels and annotations and a
// controller reference; for an Indexed Job, index in the
// job-completion-index label and annotation, the JOB_COMPLETION_INDEX env
// of every container (from the annotation) and hostname "<job>-<index>".
// The caller sets the uid and makes the name unique.
func NewJobPod(job *batchv1.Job, index int) *v1.Pod {
	t := job.Spec.Template.DeepCopy()
	prefix := job.Name + "-"
	if index >= 0 {
		prefix = job.Name + "-" + strconv.Itoa(index) + "-"
	}
	pod := &v1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: JobPodName(job.Name, index), GenerateName: prefix, Namespace: job.Namespace,
			Labels: t.Labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: t.Spec,
	}
	if index < 0 {
		return pod
	}
	i := strconv.Itoa(index)
	pod.Labels = withLabel(pod.Labels, JobCompletionIndexKey, i)
	pod.Annotations = withLabel(pod.Annotations, JobCompletionIndexKey, i)
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = job.Name + "-" + i
	}
	env := v1.EnvVar{Name: JobCompletionIndexEnv, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: "metadata.annotations['" + JobCompletionIndexKey + "']",
	}}}
	for c := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[c].Env = append(pod.Spec.InitContainers[c].Env, env)
	}
	for c := range pod.Spec.Containers {
		pod.Spec.Containers[c].Env = append(pod.Spec.Containers[c].Env, env)
	}
	return pod
}

// JobPodIndex is a pod's completion index from its annotation (or label),
// -1 when it has none or it does not parse.
func JobPodIndex(pod *v1.Pod) int {
	value, found := pod.Annotations[JobCompletionIndexKey]
	if !found {
		value, found = pod.Labels[JobCompletionIndexKey]
	}
	if !found {
		return -1
	}
	i, err := strconv.Atoi(value)
	if err != nil || i < 0 {
		return -1
	}
	return i
}
