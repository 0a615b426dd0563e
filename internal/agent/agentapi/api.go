package agentapi

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/agent/manifest"
)

// The agent API: HTTP + JSON on a unix socket (<state>/agent.sock, 0600).
//
//	POST   /v1/apply                       ApplyRequest → ApplyResponse
//	POST   /v1/unwatch                     UnwatchRequest → DeleteResponse (the dir's pods are deleted)
//	GET    /v1/pods?namespace=NS           v1.PodList (every namespace when NS is empty)
//	GET    /v1/pods/NS/NAME                PodDetail
//	DELETE /v1/pods/NS/NAME?grace=SECONDS  DeleteResponse
//	PUT    /v1/pods/NS/NAME/ephemeralcontainers  EphemeralContainersRequest → v1.Pod
//	GET    /v1/events?namespace=NS         EventList (every namespace when NS is empty)
//
// Errors come back as an HTTP error status with ErrorResponse: 400 for a
// request that fails validation, 404 for a pod that does not exist, 409
// for a request the pod's state refuses, 500 otherwise.
const (
	pathApply   = "/v1/apply"
	pathUnwatch = "/v1/unwatch"
	pathPods    = "/v1/pods"
	pathEvents  = "/v1/events"
)

// SocketName is the agent API socket's name in the state directory.
const SocketName = "agent.sock"

// ApplyRequest carries pods with the ConfigMaps and Secrets they refer to
// (a manifest bundle, validated again by the agent), or a directory for the
// agent to load and watch (then Bundle is nil: the agent reads the
// directory itself).
type ApplyRequest struct {
	Bundle *manifest.Bundle `json:"bundle,omitempty"`
	// WatchDir is an absolute directory: its pods are applied now, and
	// files added, changed or removed later add, replace or remove pods.
	WatchDir string `json:"watchDir,omitempty"`
}

// Outcomes of applying one pod, as kubectl prints them.
const (
	OutcomeCreated    = "created"
	OutcomeConfigured = "configured" // a pod's manifest changed: it is replaced; a ConfigMap's or Secret's data changed
	OutcomeUnchanged  = "unchanged"
	OutcomeDeleted    = "deleted"
)

// Kinds of ApplyResult.
const (
	KindPod       = "Pod"
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// ApplyResult says what apply (or delete) did to one object.
type ApplyResult struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"` // pods only
	Outcome   string `json:"outcome"`
}

// ApplyResponse lists what apply did, object by object: ConfigMaps and
// Secrets first, then pods.
type ApplyResponse struct {
	Objects []ApplyResult `json:"objects"`
}

// Pods are the results of pods only.
func (r ApplyResponse) Pods() []ApplyResult {
	var out []ApplyResult
	for _, o := range r.Objects {
		if o.Kind == KindPod {
			out = append(out, o)
		}
	}
	return out
}

// UnwatchRequest stops watching a directory applied with WatchDir and
// deletes its pods.
type UnwatchRequest struct {
	Dir string `json:"dir"`
}

// DeleteResponse names the pods a delete started to terminate.
type DeleteResponse struct {
	Pods []ApplyResult `json:"pods"`
}

// EphemeralContainersRequest is the new list of a running pod's ephemeral
// containers, as an update of the API server's ephemeralcontainers
// subresource: the pod's current ones unchanged, new ones appended (they
// can only be added, never changed or removed).
type EphemeralContainersRequest struct {
	EphemeralContainers []v1.EphemeralContainer `json:"ephemeralContainers"`
}

// PodDetail is one pod with its status and its recent events.
type PodDetail struct {
	Pod    v1.Pod  `json:"pod"`
	Events []Event `json:"events"`
	// LogPaths maps the ID of every container instance the runtime still
	// holds (without the "<runtime>://" prefix of containerID) to its log
	// file.
	LogPaths map[string]string `json:"logPaths,omitempty"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Event types, as Kubernetes names them.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
)

// Event is one thing that happened to a pod, as `berth describe` shows it.
// A repeat of the same event raises Count instead of adding an entry, as
// the API server's event aggregation does.
type Event struct {
	Type      string    `json:"type"`
	Reason    string    `json:"reason"`
	Object    string    `json:"object,omitempty"` // e.g. "spec.containers{app}"
	Message   string    `json:"message"`
	Count     int       `json:"count"`
	FirstTime time.Time `json:"firstTime"`
	LastTime  time.Time `json:"lastTime"`
}

// PodEvent is an event with the pod it happened to.
type PodEvent struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	PodUID    string `json:"podUID"`
	Event
}

// EventList is the events of the pods the agent holds, the oldest last
// occurrence first (the pods' events are bounded, as in PodDetail; a
// deleted pod's events go with it).
type EventList struct {
	Items []PodEvent `json:"items"`
}
