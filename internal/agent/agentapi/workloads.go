package agentapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The workload part of the agent API:
//
//	GET    /v1/workloads/KIND?namespace=NS          WorkloadList
//	GET    /v1/workloads/KIND/NS/NAME               WorkloadDetail
//	DELETE /v1/workloads/KIND/NS/NAME?grace=S       DeleteResponse (the pods it stops; background cascade)
//	POST   /v1/workloads/KIND/NS/NAME/scale         ScaleRequest → ApplyResult
//	POST   /v1/workloads/KIND/NS/NAME/rollout       RolloutRequest → ApplyResult (restart, undo, pause, resume)
//
// KIND is "deployments", "replicasets", "daemonsets", "statefulsets",
// "jobs", "cronjobs", "persistentvolumeclaims" (list, describe and delete
// only), "services" or (GET only) "endpointslices".
const pathWorkloads = "/v1/workloads"

// Workload kinds, as ApplyResult.Kind and in paths.
const (
	KindDeployment                = "Deployment"
	KindReplicaSet                = "ReplicaSet"
	ResourceDeployment            = "deployments"
	ResourceReplicaSet            = "replicasets"
	KindStatefulSet               = "StatefulSet"
	ResourceStatefulSet           = "statefulsets"
	KindPersistentVolumeClaim     = "PersistentVolumeClaim"
	ResourcePersistentVolumeClaim = "persistentvolumeclaims"
	KindDaemonSet                 = "DaemonSet"
	ResourceDaemonSet             = "daemonsets"
	KindService                   = "Service"
	ResourceService               = "services"
	ResourceEndpointSlice         = "endpointslices" // list and get only: the Services' endpoints
	KindJob                       = "Job"
	KindCronJob                   = "CronJob"
	ResourceJob                   = "jobs"
	ResourceCronJob               = "cronjobs"
)

// WorkloadService is the workload part of what the API serves.
type WorkloadService interface {
	ListWorkloads(resource, namespace string) (WorkloadList, error)
	DescribeWorkload(resource, namespace, name string) (WorkloadDetail, error)
	DeleteWorkload(ctx context.Context, resource, namespace, name string, grace *int64) (DeleteResponse, error)
	Scale(ctx context.Context, resource, namespace, name string, replicas int32) (ApplyResult, error)
	Rollout(ctx context.Context, resource, namespace, name string, req RolloutRequest) (ApplyResult, error)
}

// WorkloadList holds the objects of one kind, by namespace and name.
type WorkloadList struct {
	Deployments            []appsv1.Deployment         `json:"deployments,omitempty"`
	ReplicaSets            []appsv1.ReplicaSet         `json:"replicaSets,omitempty"`
	StatefulSets           []appsv1.StatefulSet        `json:"statefulSets,omitempty"`
	PersistentVolumeClaims []v1.PersistentVolumeClaim  `json:"persistentVolumeClaims,omitempty"`
	DaemonSets             []appsv1.DaemonSet          `json:"daemonSets,omitempty"`
	Services               []v1.Service                `json:"services,omitempty"`
	EndpointSlices         []discoveryv1.EndpointSlice `json:"endpointSlices,omitempty"`
	Jobs                   []batchv1.Job               `json:"jobs,omitempty"`
	CronJobs               []batchv1.CronJob           `json:"cronJobs,omitempty"`
}

// WorkloadDetail is one workload object with what it owns and its events.
type WorkloadDetail struct {
	Deployment *appsv1.Deployment `json:"deployment,omitempty"`
	ReplicaSet *appsv1.ReplicaSet `json:"replicaSet,omitempty"`
	// ReplicaSets are a Deployment's, newest revision first.
	ReplicaSets []appsv1.ReplicaSet `json:"replicaSets,omitempty"`
	DaemonSet   *appsv1.DaemonSet   `json:"daemonSet,omitempty"`
	StatefulSet *appsv1.StatefulSet `json:"statefulSet,omitempty"`
	// Revisions are a StatefulSet's, oldest first.
	Revisions             []appsv1.ControllerRevision `json:"revisions,omitempty"`
	PersistentVolumeClaim *v1.PersistentVolumeClaim   `json:"persistentVolumeClaim,omitempty"`
	// UsedBy names the pods whose volumes use a claim.
	UsedBy []string `json:"usedBy,omitempty"`
	// Pods are a ReplicaSet's, a StatefulSet's, a DaemonSet's or a Job's.
	Pods []v1.Pod `json:"pods,omitempty"`
	// Service and its EndpointSlices (ready and not-ready endpoints).
	Service        *v1.Service                 `json:"service,omitempty"`
	EndpointSlices []discoveryv1.EndpointSlice `json:"endpointSlices,omitempty"`
	Job            *batchv1.Job                `json:"job,omitempty"`
	CronJob        *batchv1.CronJob            `json:"cronJob,omitempty"`
	// Jobs are a CronJob's, oldest scheduled first.
	Jobs   []batchv1.Job `json:"jobs,omitempty"`
	Events []Event       `json:"events"`
}

// ScaleRequest sets a workload's replicas.
type ScaleRequest struct {
	Replicas int32 `json:"replicas"`
}

// RolloutRequest restarts a Deployment's pods (Restart: the
// kubectl.kubernetes.io/restartedAt template annotation), rolls it back
// to a revision (Undo; ToRevision 0: the previous one), or sets its
// spec.paused (Pause, Resume). One of the four.
type RolloutRequest struct {
	Restart    bool  `json:"restart,omitempty"`
	Undo       bool  `json:"undo,omitempty"`
	ToRevision int64 `json:"toRevision,omitempty"`
	Pause      bool  `json:"pause,omitempty"`
	Resume     bool  `json:"resume,omitempty"`
}

// Actions counts what the request asks for (1 when well formed).
func (r RolloutRequest) Actions() int {
	n := 0
	for _, set := range []bool{r.Restart, r.Undo, r.Pause, r.Resume} {
		if set {
			n++
		}
	}
	return n
}

func workloadPath(resource, namespace, name string) string {
	return pathWorkloads + "/" + url.PathEscape(resource) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// ListWorkloads lists the objects of a kind ("deployments",
// "replicasets") in namespace (every namespace when empty).
func (c *Client) ListWorkloads(ctx context.Context, resource, namespace string) (WorkloadList, error) {
	var list WorkloadList
	path := pathWorkloads + "/" + url.PathEscape(resource)
	if namespace != "" {
		path += "?namespace=" + url.QueryEscape(namespace)
	}
	return list, c.do(ctx, http.MethodGet, path, nil, &list)
}

// DescribeWorkload returns one object with what it owns and its events.
func (c *Client) DescribeWorkload(ctx context.Context, resource, namespace, name string) (WorkloadDetail, error) {
	var detail WorkloadDetail
	return detail, c.do(ctx, http.MethodGet, workloadPath(resource, namespace, name), nil, &detail)
}

// DeleteWorkload deletes an object; what it owns goes in the background.
func (c *Client) DeleteWorkload(ctx context.Context, resource, namespace, name string, grace *int64) (DeleteResponse, error) {
	var resp DeleteResponse
	path := workloadPath(resource, namespace, name)
	if grace != nil {
		path += "?grace=" + strconv.FormatInt(*grace, 10)
	}
	return resp, c.do(ctx, http.MethodDelete, path, nil, &resp)
}

// Scale sets an object's replicas.
func (c *Client) Scale(ctx context.Context, resource, namespace, name string, replicas int32) (ApplyResult, error) {
	var r ApplyResult
	return r, c.do(ctx, http.MethodPost, workloadPath(resource, namespace, name)+"/scale", ScaleRequest{Replicas: replicas}, &r)
}

// Rollout restarts a Deployment, rolls it back, pauses or resumes it.
func (c *Client) Rollout(ctx context.Context, resource, namespace, name string, req RolloutRequest) (ApplyResult, error) {
	var r ApplyResult
	return r, c.do(ctx, http.MethodPost, workloadPath(resource, namespace, name)+"/rollout", req, &r)
}

func (s *APIServer) routeWorkloads(mux *http.ServeMux) {
	one := pathWorkloads + "/{resource}/{namespace}/{name}"
	mux.HandleFunc("GET "+pathWorkloads+"/{resource}", s.listWorkloads)
	mux.HandleFunc("GET "+one, s.describeWorkload)
	mux.HandleFunc("DELETE "+one, s.deleteWorkload)
	mux.HandleFunc("POST "+one+"/scale", s.scale)
	mux.HandleFunc("POST "+one+"/rollout", s.rollout)
}

func (s *APIServer) listWorkloads(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Ready(); err != nil {
		s.answer(w, r, nil, err)
		return
	}
	list, err := s.svc.ListWorkloads(r.PathValue("resource"), r.URL.Query().Get("namespace"))
	s.answer(w, r, list, err)
}

func (s *APIServer) describeWorkload(w http.ResponseWriter, r *http.Request) {
	if err := s.svc.Ready(); err != nil {
		s.answer(w, r, nil, err)
		return
	}
	detail, err := s.svc.DescribeWorkload(r.PathValue("resource"), r.PathValue("namespace"), r.PathValue("name"))
	s.answer(w, r, detail, err)
}

func (s *APIServer) deleteWorkload(w http.ResponseWriter, r *http.Request) {
	grace, ok := graceParam(w, r)
	if !ok {
		return
	}
	resp, err := s.svc.DeleteWorkload(r.Context(), r.PathValue("resource"), r.PathValue("namespace"), r.PathValue("name"), grace)
	s.answer(w, r, resp, err)
}

func (s *APIServer) scale(w http.ResponseWriter, r *http.Request) {
	var req ScaleRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Replicas < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("replicas %d: must be greater than or equal to 0", req.Replicas))
		return
	}
	res, err := s.svc.Scale(r.Context(), r.PathValue("resource"), r.PathValue("namespace"), r.PathValue("name"), req.Replicas)
	s.answer(w, r, res, err)
}

func (s *APIServer) rollout(w http.ResponseWriter, r *http.Request) {
	var req RolloutRequest
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.svc.Rollout(r.Context(), r.PathValue("resource"), r.PathValue("namespace"), r.PathValue("name"), req)
	s.answer(w, r, res, err)
}

// graceParam reads ?grace=SECONDS; false when it answered an error.
func graceParam(w http.ResponseWriter, r *http.Request) (*int64, bool) {
	g := r.URL.Query().Get("grace")
	if g == "" {
		return nil, true
	}
	n, err := strconv.ParseInt(g, 10, 64)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("grace %q: want a number of seconds >= 0", g))
		return nil, false
	}
	return &n, true
}
