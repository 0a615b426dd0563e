// Package workload holds the node agent's controllers for workload kinds
// (apps/v1 ReplicaSet, Deployment, StatefulSet and DaemonSet, batch/v1 Job
// and CronJob; a Service's endpoints, ClusterIP and nodePort allocation)
// as pure reconcile functions: given an
// object, what it owns and what was observed of it, they return what to
// create, scale and delete and the object's new status, as the
// kube-controller-manager's replicaset and deployment controllers would.
// Time comes in as an argument; nothing here touches the runtime, the disk
// or the agent's state (package agent applies the actions).
//
//	func ReconcileReplicaSet(rs *appsv1.ReplicaSet, pods []Pod, now time.Time) ReplicaSetActions
//	func ReconcileDeployment(d *appsv1.Deployment, sets []*appsv1.ReplicaSet, now time.Time) DeploymentActions
//	func ReconcileDaemonSet(ds *appsv1.DaemonSet, node *v1.Node, pods []DaemonPod, now time.Time) DaemonSetActions
//	func ReconcileStatefulSet(in StatefulSetInput) StatefulSetActions
//	func NewStatefulSetPod(set *appsv1.StatefulSet, template *v1.PodTemplateSpec, revision string, ordinal int) *v1.Pod
//	func ComputeHash(template *v1.PodTemplateSpec, collisionCount *int32) string
//	func ServiceEndpoints(svc *v1.Service, pods []v1.Pod) []Endpoint
//	func EndpointSlices(svc *v1.Service, eps []Endpoint) []discoveryv1.EndpointSlice
//	func (r ServiceRange) AllocateClusterIP(requested string, used map[netip.Addr]bool) (netip.Addr, error)
//	func AllocateNodePort(requested, minPort, maxPort int32, used map[int32]bool) (int32, error)
//
// A DaemonSet runs on the one node: its pod (with the controller-revision-hash
// label, the daemon tolerations and the node's name as required affinity) should
// run when it fits the node's labels and taints as package nodefit admits a pod.
//
//	func ReconcileJob(job *batchv1.Job, pods []JobPod, now time.Time) JobActions
//	func ReconcileCronJob(cj *batchv1.CronJob, jobs []*batchv1.Job, now time.Time) CronJobActions
//	func ParseSchedule(schedule string, timeZone *string) (cron.Schedule, error)
//
// Jobs (job.go, job_status.go, job_pod.go) follow the job controller:
// pods until completions succeed (Indexed: every index; no completions:
// until one succeeds), at most parallelism at once, re-made after the
// failure back-off (10 s doubling to 6 min); backoffLimit counts failed
// pods (restartPolicy Never) or the running pods' container restarts
// (OnFailure), as a podFailurePolicy says (job_failurepolicy.go: FailJob,
// Ignore, Count, FailIndex on exit codes or pod conditions);
// backoffLimitPerIndex counts failures per index (job_index.go: the
// job-index-failure-count annotations, per-index back-off, failedIndexes,
// maxFailedIndexes); a successPolicy completes an Indexed Job early
// (job_success.go); each pod is counted
// once (the agent keeps the counted UIDs); the FailureTarget /
// SuccessCriteriaMet conditions come
// first, Failed / Complete once no pod runs. CronJobs (cronjob.go,
// schedule.go) follow the cronjob controller: robfig/cron's ParseStandard
// in the timeZone, the most recent missed start time within
// startingDeadlineSeconds run once (a Job named
// "<cronjob>-<minutes since the epoch>"), concurrencyPolicy, history
// limits.
//
// Names and labels are Kubernetes': a Deployment's ReplicaSet is
// "<deployment>-<pod-template-hash>" (the hash computed from the template as
// the deployment controller does), its pods "<replicaset>-<5 characters>"
// from the alphabet of the API server's generateName (PodName), and each
// carries a controller ownerReference to its owner.
//
// A rolling update never has fewer than replicas-maxUnavailable available
// pods (maxUnavailable rounded down) nor more than replicas+maxSurge pods
// (maxSurge rounded up) counted from the ReplicaSets' replicas; Recreate
// scales the old ReplicaSets to zero and creates the new one's pods once no
// old pod is left.
//
// A StatefulSet's pods are "<set>-<ordinal>" with hostname and subdomain
// set, the pod-name, pod-index and controller-revision-hash ("<set>-<hash>")
// labels, and a claim "<template>-<set>-<ordinal>" per claim template
// (statefulset_pod.go); statefulset.go orders them (OrderedReady or
// Parallel), replaces failed ones at their ordinal, scales down from the
// highest ordinal, rolls updates down to the partition within
// maxUnavailable, and lists claims to remove by whenScaled.
package workload
