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
//	GET    /v1/node                        NodeDetail
//	GET    /v1/pulls?namespace=NS          PullList: the image pulls of the pods (every namespace when NS is empty)
//
// Errors come back as an HTTP error status with ErrorResponse: 400 for a
// request that fails validation, 404 for a pod that does not exist, 409
// for a request the pod's state refuses, 500 otherwise.
const (
	pathApply   = "/v1/apply"
	pathUnwatch = "/v1/unwatch"
	pathPods    = "/v1/pods"
	pathEvents  = "/v1/events"
	pathNode    = "/v1/node"
	pathPulls   = "/v1/pulls"
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
	// OutcomeSkipped: an object of a cluster kind berth does not apply on
	// one node (a Namespace, an Ingress...); Message says why.
	OutcomeSkipped = "skipped"
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
	// APIVersion and Message are set for a skipped object: its group
	// names it as kubectl does (ingress.networking.k8s.io/web), Message
	// says why berth does not apply it. Message is also a warning about
	// an applied object (a pod's metadata.uid ignored), which the CLI
	// prints as kubectl prints the API server's warnings.
	APIVersion string `json:"apiVersion,omitempty"`
	Message    string `json:"message,omitempty"`
}

// ApplyResponse lists what apply did, object by object: skipped objects
// first, then ConfigMaps and Secrets, then pods.
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

// DeleteResponse names the pods a delete started to terminate, and the
// workload objects it deleted (whose pods those are).
type DeleteResponse struct {
	Pods    []ApplyResult `json:"pods"`
	Deleted []ApplyResult `json:"deleted,omitempty"`
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

// PodEvent is an event with the object it happened to: a pod (Kind
// empty), or, with its Kind, a workload, a Service or the node (whose
// namespace is empty). Pod and PodUID are then the object's name and uid.
type PodEvent struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind,omitempty"`
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

// NodeDetail is the agent's node as kubelet reports it (conditions,
// capacity, allocatable, addresses, nodeInfo) with the node's recent
// events (condition changes, eviction thresholds met).
type NodeDetail struct {
	Node   v1.Node `json:"node"`
	Events []Event `json:"events"`
}

// States of an ImagePull.
const (
	PullPulling = "pulling"
	PullDone    = "done"
	PullFailed  = "failed"
)

// PullList holds the image pulls of the agent's pods: for each pod and
// image, the pull in progress or the last one that ended.
type PullList struct {
	Items []ImagePull `json:"items"`
}

// ImagePull is one image pull of a pod, as far as the runtime tells it.
// Over CRI alone the agent knows when a pull started and ended, and the
// image's size once it is there; berth serve also reports the layers and
// bytes as they arrive (Detailed).
type ImagePull struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	PodUID    string `json:"podUID"`
	Image     string `json:"image"` // as the pod's container names it
	State     string `json:"state"` // PullPulling, PullDone, PullFailed
	// Detailed says the runtime reports the pull's layers and bytes.
	Detailed bool        `json:"detailed"`
	Layers   []LayerPull `json:"layers,omitempty"` // in the order first reported
	// LayersDone counts the layers fetched or already present.
	LayersDone  int   `json:"layersDone"`
	LayersTotal int   `json:"layersTotal"`
	BytesDone   int64 `json:"bytesDone"`  // compressed bytes fetched (layers already present not counted)
	BytesTotal  int64 `json:"bytesTotal"` // of the layers to fetch; 0 = not known yet
	// Rate is BytesDone per second since the pull started.
	Rate float64 `json:"rate"`
	// Size is the image's size once pulled, as the runtime's ImageStatus
	// reports it (0 = unknown).
	Size    int64     `json:"size,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Error   string    `json:"error,omitempty"`
}

// LayerPull is one layer of a detailed pull. States: waiting,
// downloading, unpacking, done, exists (already present), failed.
type LayerPull struct {
	Digest string `json:"digest"`
	State  string `json:"state"`
	Done   int64  `json:"done"`
	Total  int64  `json:"total"` // 0 = unknown
	// Started is when its bytes began to arrive (zero: not yet, or the
	// layer was present); Ended when it reached done, exists or failed.
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
}
